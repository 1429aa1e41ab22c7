package patches

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// What YuniKorn reads from pods (yunikorn-k8shim v1.9.0,
// pkg/common/constants/constants.go) and what Kueue reads (kueue v0.19.2,
// pkg/controller/constants and pkg/controller/jobs/pod/constants).
const (
	yunikornAppID            = "yunikorn.apache.org/app-id"
	yunikornQueue            = "yunikorn.apache.org/queue"
	yunikornTaskGroupName    = "yunikorn.apache.org/task-group-name"
	yunikornTaskGroups       = "yunikorn.apache.org/task-groups"
	yunikornPolicyParameters = "yunikorn.apache.org/schedulingPolicyParameters"
	kueueQueueName           = "kueue.x-k8s.io/queue-name"
	kueuePriorityClass       = "kueue.x-k8s.io/priority-class"
	kueueManaged             = "kueue.x-k8s.io/managed"
	kueueSuspendingParent    = "kueue.x-k8s.io/pod-suspending-parent"
	kueueAdmissionGate       = "kueue.x-k8s.io/admission"
	// The task groups of a Spark application, as YuniKorn's gang
	// scheduling guide names them for Spark.
	driverTaskGroup   = "spark-driver"
	executorTaskGroup = "spark-executor"
)

// Scheduling is what AnnotationScheduling holds.
type Scheduling struct {
	Scheduler         string `json:"scheduler"`
	Queue             string `json:"queue,omitempty"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	Gang
}

// SchedulingOf reads a driver's AnnotationScheduling; ok is false when the
// driver has no batch scheduler.
func SchedulingOf(driver *corev1.Pod) (s Scheduling, ok bool, err error) {
	v, found := driver.Annotations[vocab.AnnotationScheduling]
	if !found {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, false, fmt.Errorf("annotation %s: %v", vocab.AnnotationScheduling, err)
	}
	return s, true, nil
}

// planScheduling works out the driver's batch scheduler: the pod's
// annotations, else what the pod already asks of YuniKorn or Kueue, else
// the policy. It refuses what cannot work, naming the field.
func planScheduling(pod *corev1.Pod, p *plan) error {
	base := p.pol.Scheduling
	from := map[string]string{} // field -> where its value came from
	for _, f := range []string{"batchScheduler", "queue", "placeholderTimeout", "gangStyle", "priorityClassName"} {
		from[f] = "the policy's scheduling." + f
	}
	chosen, chosenFrom := base.BatchScheduler, from["batchScheduler"]
	inferred, inferredFrom := inferScheduler(pod)
	annotated, hasAnnotation := pod.Annotations[vocab.AnnotationBatchScheduler]
	switch {
	case hasAnnotation:
		chosen, chosenFrom = strings.TrimSpace(annotated), "annotation "+vocab.AnnotationBatchScheduler
		if inferred != "" && chosen != inferred {
			return refuseScheduling("annotation %s says %q, but the pod's %s asks for %s; remove one of them",
				vocab.AnnotationBatchScheduler, annotated, inferredFrom, inferred)
		}
	case inferred != "":
		chosen, chosenFrom = inferred, "the pod's "+inferredFrom
	case chosen == "":
		chosenFrom = "annotation " + vocab.AnnotationBatchScheduler + " (or the policy's scheduling.batchScheduler)"
	}
	if base.Enforce && base.BatchScheduler != "" && chosen != base.BatchScheduler {
		return refuseScheduling("%s asks for %q, but the policy enforces the batch scheduler %s; remove it",
			chosenFrom, chosen, base.BatchScheduler)
	}
	if n := pod.Spec.NodeName; n != "" && chosen != "" {
		enforced := ""
		if base.Enforce {
			enforced = ", which the policy enforces"
		}
		return refuseScheduling("spec.nodeName %q places the pod on a node without a scheduler, so the batch scheduler %s (%s%s) "+
			"never sees the driver; remove spec.nodeName, and use nodeSelector or affinity", n, chosen, chosenFrom, enforced)
	}
	s := policy.Scheduling{BatchScheduler: chosen}
	if chosen == base.BatchScheduler {
		s = base
	}
	from["batchScheduler"] = chosenFrom
	q, err := podQueue(pod, chosen)
	if err != nil {
		return err
	}
	if q.value != "" {
		s.Queue, from["queue"] = q.value, q.from
	}
	if v, ok := pod.Annotations[vocab.AnnotationPlaceholderTimeout]; ok {
		s.PlaceholderTimeout, from["placeholderTimeout"] = strings.TrimSpace(v), "annotation "+vocab.AnnotationPlaceholderTimeout
	}
	if errs := policy.CheckScheduling(s, func(name string) string { return from[name] }); len(errs) > 0 {
		return refuseScheduling("%s", strings.Join(errs, "; "))
	}
	switch s.BatchScheduler {
	case policy.SchedulerYuniKorn:
		if err := checkYuniKornPod(pod, p.conf); err != nil {
			return err
		}
		// The pod's own priority class is the driver's, and so its
		// placeholders' and its executors'.
		s.PriorityClassName = cmp.Or(pod.Spec.PriorityClassName, s.PriorityClassName)
		warnReplacedYuniKornAnnotations(pod, p)
	case policy.SchedulerKueue:
		if s.Queue == "" {
			return refuseScheduling("Kueue needs a LocalQueue: set annotation %s, or the policy's scheduling.queue", vocab.AnnotationQueue)
		}
		s.PriorityClassName = cmp.Or(pod.Labels[kueuePriorityClass], s.PriorityClassName)
	default:
		return nil
	}
	p.sched = &s
	return nil
}

// warnReplacedYuniKornAnnotations warns when a pod that sparklet has not
// injected yet carries gang annotations of its own: sparklet sizes the
// gang from the Spark configuration and replaces them.
func warnReplacedYuniKornAnnotations(pod *corev1.Pod, p *plan) {
	if _, injected := pod.Annotations[vocab.AnnotationStatus]; injected {
		return
	}
	for _, k := range []string{yunikornTaskGroups, yunikornTaskGroupName, yunikornPolicyParameters} {
		if _, ok := pod.Annotations[k]; ok {
			p.warn(fmt.Sprintf("sparklet replaced annotation %s with the gang it sized from the Spark configuration (docs/scheduling.md); set the timeout with %s",
				k, vocab.AnnotationPlaceholderTimeout))
		}
	}
}

// inferScheduler tells which batch scheduler the pod already asks for
// without sparklet's annotation, and by which field.
func inferScheduler(pod *corev1.Pod) (scheduler, field string) {
	if pod.Spec.SchedulerName == policy.SchedulerYuniKorn {
		return policy.SchedulerYuniKorn, "spec.schedulerName"
	}
	if _, ok := pod.Labels[kueueQueueName]; ok {
		return policy.SchedulerKueue, "label " + kueueQueueName
	}
	return "", ""
}

type sourced struct{ value, from string }

// podQueue is the queue the pod names, by annotation or by the scheduler's
// own label; the two must agree.
func podQueue(pod *corev1.Pod, scheduler string) (sourced, error) {
	var label sourced
	switch scheduler {
	case policy.SchedulerYuniKorn:
		label = sourced{pod.Labels[yunikornQueue], "label " + yunikornQueue}
	case policy.SchedulerKueue:
		label = sourced{pod.Labels[kueueQueueName], "label " + kueueQueueName}
	}
	v, ok := pod.Annotations[vocab.AnnotationQueue]
	if !ok {
		return label, nil
	}
	v = strings.TrimSpace(v)
	if label.value != "" && label.value != v {
		return sourced{}, refuseScheduling("annotation %s is %q but %s is %q; keep one of them", vocab.AnnotationQueue, v, label.from, label.value)
	}
	return sourced{v, "annotation " + vocab.AnnotationQueue}, nil
}

// checkYuniKornPod refuses a pod or conf that names another scheduler.
func checkYuniKornPod(pod *corev1.Pod, conf map[string]string) error {
	switch pod.Spec.SchedulerName {
	case "", corev1.DefaultSchedulerName, policy.SchedulerYuniKorn:
	default:
		return refuseScheduling("spec.schedulerName is %q, but the batch scheduler is yunikorn; remove spec.schedulerName", pod.Spec.SchedulerName)
	}
	for _, k := range []string{"spark.kubernetes.scheduler.name", "spark.kubernetes.executor.scheduler.name"} {
		if v, ok := conf[k]; ok && strings.TrimSpace(v) != policy.SchedulerYuniKorn {
			return refuseScheduling("%s=%q, but the batch scheduler is yunikorn; remove %s", k, v, k)
		}
	}
	return nil
}

func refuseScheduling(format string, args ...any) error {
	return &Refused{Reason: "bad-scheduling", Message: fmt.Sprintf(format, args...)}
}

// applyScheduling sizes the gang from the finished pod and writes what the
// batch scheduler reads, plus AnnotationScheduling for the sidecar. A
// driver without a batch scheduler has no AnnotationScheduling: the
// sidecar stamps executors with what it says, so only sparklet writes it.
func applyScheduling(pod *corev1.Pod, p *plan, _ *Status) error {
	s := p.sched
	if s == nil {
		delete(pod.Annotations, vocab.AnnotationScheduling)
		return nil
	}
	c := p.container(pod)
	gang, err := GangOf(pod, p.conf, isSpark3Image(c.Image))
	if err != nil {
		return &Refused{Reason: "bad-spark-conf", Message: "sizing the gang for " + s.BatchScheduler + ": " + err.Error()}
	}
	rec := Scheduling{Scheduler: s.BatchScheduler, Queue: s.Queue, PriorityClassName: s.PriorityClassName, Gang: gang}
	switch s.BatchScheduler {
	case policy.SchedulerYuniKorn:
		if err := stampYuniKornDriver(pod, p, *s, gang); err != nil {
			return err
		}
	case policy.SchedulerKueue:
		stampKueueDriver(pod, *s)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	setAnnotation(pod, vocab.AnnotationScheduling, string(b))
	return nil
}

// stampKueueDriver puts the driver in its LocalQueue and gates it until
// Kueue admits it. Kueue's webhook gates a pod that carries the queue
// label (PodWebhook.Default in kueue v0.19.2
// pkg/controller/jobs/pod/pod_webhook.go), but it runs before sparklet's:
// the API server calls mutating webhook configurations in name order, and
// Kueue's is not re-invoked by default (reinvocationPolicy Never). So it
// does not see a label sparklet adds. The gate and the managed label make
// the driver wait for Kueue either way instead of running outside the
// quota; Kueue's own gating leaves them as they are.
func stampKueueDriver(pod *corev1.Pod, s policy.Scheduling) {
	pod.Labels[kueueQueueName] = s.Queue
	pod.Labels[kueueManaged] = "true"
	if s.PriorityClassName != "" {
		pod.Labels[kueuePriorityClass] = s.PriorityClassName
	}
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == kueueAdmissionGate {
			return
		}
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: kueueAdmissionGate})
}

// taskGroup is one of YuniKorn's task groups, as the shim decodes the
// task-groups annotation (TaskGroup in yunikorn-k8shim v1.9.0
// pkg/cache/amprotocol.go).
type taskGroup struct {
	Name                      string                            `json:"name"`
	MinMember                 int32                             `json:"minMember"`
	MinResource               corev1.ResourceList               `json:"minResource"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// stampYuniKornDriver makes the driver the first pod of a YuniKorn gang: it
// carries the whole application's task groups (YuniKorn's gang
// scheduling guide: the first pod holds the application's metadata).
func stampYuniKornDriver(pod *corev1.Pod, p *plan, s policy.Scheduling, gang Gang) error {
	pod.Spec.SchedulerName = policy.SchedulerYuniKorn
	if pod.Labels[yunikornAppID] == "" {
		pod.Labels[yunikornAppID] = p.appID
	}
	if s.Queue != "" {
		pod.Labels[yunikornQueue] = s.Queue
	}
	if s.PriorityClassName != "" && pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = s.PriorityClassName
	}
	driver := taskGroup{Name: driverTaskGroup, MinMember: 1, MinResource: gang.Driver,
		NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations,
		Affinity: pod.Spec.Affinity, TopologySpreadConstraints: pod.Spec.TopologySpreadConstraints}
	if driver.MinResource == nil {
		driver.MinResource = corev1.ResourceList{}
	}
	groups := []taskGroup{driver}
	if gang.Executors > 0 {
		sel, tol := executorPlacement(p)
		groups = append(groups, taskGroup{Name: executorTaskGroup, MinMember: int32(gang.Executors),
			MinResource: gang.Executor, NodeSelector: sel, Tolerations: tol})
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return err
	}
	setAnnotation(pod, yunikornTaskGroups, string(b))
	setAnnotation(pod, yunikornTaskGroupName, driverTaskGroup)
	params := "gangSchedulingStyle=" + cmp.Or(s.GangStyle, "Soft")
	if n := s.PlaceholderSeconds(); n > 0 {
		params = fmt.Sprintf("placeholderTimeoutInSeconds=%d %s", n, params)
	}
	setAnnotation(pod, yunikornPolicyParameters, params)
	return nil
}

// executorPlacement is the node selector and tolerations executors get:
// Spark's spark.kubernetes.node.selector.* and
// spark.kubernetes.executor.node.selector.* (BasicExecutorFeatureStep),
// then the policy's executor defaults and enforced values, as the sidecar
// applies them. An executor pod template's placement is not known here.
func executorPlacement(p *plan) (map[string]string, []corev1.Toleration) {
	sel := map[string]string{}
	for _, prefix := range []string{"spark.kubernetes.node.selector.", "spark.kubernetes.executor.node.selector."} {
		for k, v := range p.conf {
			if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
				sel[name] = v
			}
		}
	}
	rules := policy.MergeSettings(p.pol.Executor.Defaults, p.pol.Executor.Enforced)
	for k, v := range rules.NodeSelector {
		sel[k] = v
	}
	if len(sel) == 0 {
		sel = nil
	}
	return sel, rules.Tolerations
}

func setAnnotation(pod *corev1.Pod, k, v string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[k] = v
}

// String describes the scheduling for people, as sparklet inject reports it.
func (s Scheduling) String() string {
	size := func(l corev1.ResourceList) string {
		cpu, mem := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
		return "cpu " + cpu.String() + ", memory " + mem.String()
	}
	switch s.Scheduler {
	case policy.SchedulerYuniKorn:
		queue := ""
		if s.Queue != "" {
			queue = " in queue " + s.Queue
		}
		return fmt.Sprintf("yunikorn%s: a gang of the driver (%s) and %d executors (%s each)", queue, size(s.Driver), s.Executors, size(s.Executor))
	case policy.SchedulerKueue:
		return fmt.Sprintf("kueue, LocalQueue %s: the driver (%s) and each executor (%s) are admitted one by one; %d executors at start",
			s.Queue, size(s.Driver), size(s.Executor), s.Executors)
	}
	return s.Scheduler
}
