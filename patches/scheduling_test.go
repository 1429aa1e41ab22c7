package patches

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

func annotated(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func injectOK(t *testing.T, pod *corev1.Pod, policyText string) *corev1.Pod {
	t.Helper()
	if _, err := inject(t, pod, mustPolicy(t, policyText)); err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestYuniKornDriver(t *testing.T) {
	pod := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationQueue, "root.sparklet",
		vocab.AnnotationPlaceholderTimeout, "90s", vocab.AnnotationSparkConf, "spark.executor.instances 3\nspark.executor.memory 2g\n"),
		func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "spark"} }), "")
	if pod.Spec.SchedulerName != "yunikorn" {
		t.Errorf("schedulerName %q", pod.Spec.SchedulerName)
	}
	if pod.Labels[yunikornAppID] != "spark-test" || pod.Labels[yunikornQueue] != "root.sparklet" {
		t.Errorf("labels %v", pod.Labels)
	}
	if got := pod.Annotations[yunikornPolicyParameters]; got != "placeholderTimeoutInSeconds=90 gangSchedulingStyle=Soft" {
		t.Errorf("policy parameters %q", got)
	}
	if pod.Annotations[yunikornTaskGroupName] != driverTaskGroup {
		t.Errorf("task group name %q", pod.Annotations[yunikornTaskGroupName])
	}
	var groups []taskGroup
	if err := json.Unmarshal([]byte(pod.Annotations[yunikornTaskGroups]), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Name != driverTaskGroup || groups[0].MinMember != 1 || groups[1].Name != executorTaskGroup || groups[1].MinMember != 3 {
		t.Fatalf("task groups %+v", groups)
	}
	if groups[0].NodeSelector["pool"] != "spark" {
		t.Errorf("driver group's node selector %v", groups[0].NodeSelector)
	}
	// The driver's member counts the injected sidecar: more than the Spark
	// container alone asks for.
	var spark corev1.ResourceList
	for _, c := range pod.Spec.Containers {
		if c.Name == "spark" {
			spark = c.Resources.Requests
		}
	}
	dm, sm := groups[0].MinResource[corev1.ResourceMemory], spark[corev1.ResourceMemory]
	if dm.Cmp(sm) <= 0 {
		t.Errorf("driver group memory %s is not above the Spark container's %s", dm.String(), sm.String())
	}
	em := groups[1].MinResource[corev1.ResourceMemory]
	if em.Cmp(resource.MustParse("2432Mi")) != 0 {
		t.Errorf("executor group memory %s, want 2432Mi (2g + 384m)", em.String())
	}
	s, ok, err := SchedulingOf(pod)
	if err != nil || !ok || s.Scheduler != "yunikorn" || s.Executors != 3 || s.Queue != "root.sparklet" {
		t.Fatalf("scheduling annotation %+v %v %v", s, ok, err)
	}
}

func TestYuniKornDriverWithoutExecutorsHasOneTaskGroup(t *testing.T) {
	pod := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn",
		vocab.AnnotationSparkConf, "spark.dynamicAllocation.enabled true\nspark.dynamicAllocation.shuffleTracking.enabled true\n")), "")
	var groups []taskGroup
	if err := json.Unmarshal([]byte(pod.Annotations[yunikornTaskGroups]), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Name != driverTaskGroup {
		t.Fatalf("task groups %+v; YuniKorn refuses a group of minMember 0", groups)
	}
}

func TestKueueDriver(t *testing.T) {
	pod := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "team-a")),
		"scheduling:\n  batchScheduler: kueue\n  priorityClassName: batch-low\n")
	if pod.Labels[kueueQueueName] != "team-a" || pod.Labels[kueuePriorityClass] != "batch-low" {
		t.Errorf("labels %v", pod.Labels)
	}
	if pod.Spec.SchedulerName != "" {
		t.Errorf("kueue changed the scheduler to %q", pod.Spec.SchedulerName)
	}
	// Kueue's webhook runs before sparklet's and does not see the label:
	// the driver is gated for Kueue all the same, once.
	if pod.Labels[kueueManaged] != "true" || len(pod.Spec.SchedulingGates) != 1 || pod.Spec.SchedulingGates[0].Name != kueueAdmissionGate {
		t.Errorf("driver not gated for Kueue: labels %v, gates %v", pod.Labels, pod.Spec.SchedulingGates)
	}
	again := pod.DeepCopy()
	if _, err := inject(t, again, mustPolicy(t, "scheduling:\n  batchScheduler: kueue\n  priorityClassName: batch-low\n")); err != nil {
		t.Fatal(err)
	}
	if len(again.Spec.SchedulingGates) != 1 {
		t.Errorf("gates after a second injection: %v", again.Spec.SchedulingGates)
	}
	if _, ok := pod.Annotations[yunikornTaskGroups]; ok {
		t.Error("a kueue driver got YuniKorn task groups")
	}
}

// TestSchedulingChoice covers where the choice comes from: the policy, the
// pod's annotation, or what the pod already asks of the scheduler.
func TestSchedulingChoice(t *testing.T) {
	cases := []struct {
		name   string
		policy string
		pod    *corev1.Pod
		want   string // the scheduler in the annotation; "" for none
	}{
		{"nothing", "", driverPod(), ""},
		{"policy default", "scheduling:\n  batchScheduler: yunikorn\n", driverPod(), "yunikorn"},
		{"annotation", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn")), "yunikorn"},
		{"opt out of the policy", "scheduling:\n  batchScheduler: yunikorn\n  queue: root.a\n", driverPod(annotated(vocab.AnnotationBatchScheduler, "none")), ""},
		{"the pod's own schedulerName", "", driverPod(func(p *corev1.Pod) { p.Spec.SchedulerName = "yunikorn" }), "yunikorn"},
		{"the pod's own Kueue label", "", driverPod(func(p *corev1.Pod) { p.Labels[kueueQueueName] = "lq" }), "kueue"},
		{"the pod's label over the policy", "scheduling:\n  batchScheduler: yunikorn\n", driverPod(func(p *corev1.Pod) { p.Labels[kueueQueueName] = "lq" }), "kueue"},
		{"namespace section", "scheduling:\n  batchScheduler: yunikorn\nnamespaces:\n  spark-jobs:\n    scheduling:\n      batchScheduler: kueue\n      queue: lq\n", driverPod(), "kueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := injectOK(t, tc.pod, tc.policy)
			s, _, err := SchedulingOf(pod)
			if err != nil {
				t.Fatal(err)
			}
			if s.Scheduler != tc.want {
				t.Fatalf("scheduler %q, want %q", s.Scheduler, tc.want)
			}
		})
	}
}

// TestSchedulingRefusals: every combination that cannot work is refused
// with the field at fault named.
func TestSchedulingRefusals(t *testing.T) {
	cases := []struct {
		name, policy string
		pod          *corev1.Pod
		names        []string
	}{
		{"unknown scheduler", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "volcano")), []string{vocab.AnnotationBatchScheduler, "yunikorn, kueue, none"}},
		{"queue without a scheduler", "", driverPod(annotated(vocab.AnnotationQueue, "root.a")), []string{vocab.AnnotationQueue, vocab.AnnotationBatchScheduler}},
		{"kueue without a queue", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue")), []string{vocab.AnnotationQueue, "scheduling.queue"}},
		{"placeholder timeout with kueue", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "lq", vocab.AnnotationPlaceholderTimeout, "5m")), []string{vocab.AnnotationPlaceholderTimeout, "Kueue"}},
		{"bad timeout", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationPlaceholderTimeout, "soon")), []string{vocab.AnnotationPlaceholderTimeout, "10m"}},
		{"bad YuniKorn queue", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationQueue, "root..a")), []string{vocab.AnnotationQueue, "root.sparklet"}},
		{"bad LocalQueue", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "Team A")), []string{vocab.AnnotationQueue, "LocalQueue"}},
		{"another scheduler name", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn"), func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }), []string{"spec.schedulerName"}},
		{"annotation against the pod's schedulerName", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "lq"), func(p *corev1.Pod) { p.Spec.SchedulerName = "yunikorn" }), []string{vocab.AnnotationBatchScheduler, "spec.schedulerName"}},
		{"annotation against the Kueue label", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "a"), func(p *corev1.Pod) { p.Labels[kueueQueueName] = "b" }), []string{vocab.AnnotationQueue, kueueQueueName}},
		{"Spark's scheduler name", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationSparkConf, "spark.kubernetes.executor.scheduler.name volcano\n")), []string{"spark.kubernetes.executor.scheduler.name"}},
		{"enforced", "scheduling:\n  batchScheduler: kueue\n  queue: lq\n  enforce: true\n", driverPod(annotated(vocab.AnnotationBatchScheduler, "none")), []string{vocab.AnnotationBatchScheduler, "enforces"}},
		{"enforced against the pod's schedulerName", "scheduling:\n  batchScheduler: kueue\n  queue: lq\n  enforce: true\n", driverPod(func(p *corev1.Pod) { p.Spec.SchedulerName = "yunikorn" }), []string{"spec.schedulerName", "enforces"}},
		{"bad executor size", "", driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationSparkConf, "spark.kubernetes.executor.request.cores lots\n")), []string{"spark.kubernetes.executor.request.cores"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inject(t, tc.pod, mustPolicy(t, tc.policy))
			var r *Refused
			if !errors.As(err, &r) {
				t.Fatalf("error %v, want a refusal", err)
			}
			for _, n := range tc.names {
				if !strings.Contains(r.Message, n) {
					t.Errorf("refusal %q does not name %s", r.Message, n)
				}
			}
		})
	}
}

func TestSchedulingIsIdempotent(t *testing.T) {
	for _, sched := range []string{"yunikorn", "kueue"} {
		pol := mustPolicy(t, "")
		once := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, sched, vocab.AnnotationQueue, "lq")), "")
		twice := once.DeepCopy()
		if _, err := inject(t, twice, pol); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{vocab.AnnotationScheduling, yunikornTaskGroups} {
			if once.Annotations[k] != twice.Annotations[k] {
				t.Errorf("%s: %s changed on a second injection:\n%s\n%s", sched, k, once.Annotations[k], twice.Annotations[k])
			}
		}
	}
}

func executorFor(cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "exec-1", Labels: map[string]string{vocab.LabelRole: "executor", vocab.LabelAppID: "spark-test"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "apache/spark:3.5.4",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
			}}}},
	}
}

func TestExecutorStamping(t *testing.T) {
	pol := mustPolicy(t, "")
	yk := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationQueue, "root.sparklet")), "")
	ex := executorFor("1", "1408Mi")
	res, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(yk), AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.SchedulerName != "yunikorn" || ex.Labels[yunikornAppID] != "spark-test" || ex.Labels[yunikornQueue] != "root.sparklet" ||
		ex.Annotations[yunikornTaskGroupName] != executorTaskGroup {
		t.Errorf("YuniKorn executor: scheduler %q labels %v annotations %v", ex.Spec.SchedulerName, ex.Labels, ex.Annotations)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("an executor of the gang's size is beyond it: %+v", res.Warnings)
	}
	res, err = Executor(executorFor("2", "4Gi"), ExecutorInput{Policy: pol, Driver: ReadDriver(yk), AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Reason != WarnExecutorLargerThanGang ||
		!strings.Contains(res.Warnings[0].Message, "cpu 2 > 1") || !strings.Contains(res.Warnings[0].Message, "memory 4Gi > 1408Mi") {
		t.Errorf("a larger executor's warnings = %+v, want one %s naming cpu 2 > 1 and memory 4Gi > 1408Mi", res.Warnings, WarnExecutorLargerThanGang)
	}

	kq := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "lq")), "")
	ex = executorFor("1", "1408Mi")
	if _, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(kq), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if ex.Labels[kueueQueueName] != "lq" || ex.Labels[kueueManaged] != "true" || ex.Annotations[kueueSuspendingParent] == "" {
		t.Errorf("Kueue executor: labels %v annotations %v", ex.Labels, ex.Annotations)
	}
	if ex.Spec.SchedulerName != "" {
		t.Errorf("Kueue executor's scheduler changed to %q", ex.Spec.SchedulerName)
	}
	res, err = Executor(executorFor("2", "4Gi"), ExecutorInput{Policy: pol, Driver: ReadDriver(kq), AppID: "spark-test"})
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("a Kueue application has no gang, yet: %v, warnings %+v", err, res.Warnings)
	}

	plain := injectOK(t, driverPod(), "")
	ex = executorFor("1", "1408Mi")
	if _, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(plain), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	for k := range ex.Labels {
		if strings.Contains(k, "yunikorn") || strings.Contains(k, "kueue") {
			t.Errorf("an executor without a batch scheduler got label %s", k)
		}
	}
}

// TestSchedulingKeepsThePodsOwn: a pod's own priority class is kept and
// followed by its executors, and gang annotations sparklet replaces are
// named in a warning.
func TestSchedulingKeepsThePodsOwn(t *testing.T) {
	pol := mustPolicy(t, "scheduling: {batchScheduler: yunikorn, priorityClassName: batch}\n")
	pod := driverPod(annotated(yunikornTaskGroups, `[{"name":"mine","minMember":1,"minResource":{}}]`),
		func(p *corev1.Pod) { p.Spec.PriorityClassName = "urgent" })
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.PriorityClassName != "urgent" {
		t.Errorf("priorityClassName %q, want the pod's own", pod.Spec.PriorityClassName)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "sparklet replaced annotation "+yunikornTaskGroups) {
		t.Errorf("no warning about the replaced task groups: %q", res.Warnings)
	}
	ex := executorFor("1", "1408Mi")
	if _, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(pod), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if ex.Spec.PriorityClassName != "urgent" {
		t.Errorf("executor priorityClassName %q, want the driver's", ex.Spec.PriorityClassName)
	}
	again := pod.DeepCopy()
	res, err = Driver(again, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("a second injection: %v, warnings %q", err, res.Warnings)
	}

	kq := mustPolicy(t, "scheduling: {batchScheduler: kueue, queue: lq, priorityClassName: batch-low}\n")
	pod = driverPod(func(p *corev1.Pod) { p.Labels[kueuePriorityClass] = "batch-high" })
	if _, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: kq, Version: "test", AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	ex = executorFor("1", "1408Mi")
	if _, err := Executor(ex, ExecutorInput{Policy: kq, Driver: ReadDriver(pod), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if pod.Labels[kueuePriorityClass] != "batch-high" || ex.Labels[kueuePriorityClass] != "batch-high" {
		t.Errorf("Kueue priority class: driver %q, executor %q; want the pod's own batch-high", pod.Labels[kueuePriorityClass], ex.Labels[kueuePriorityClass])
	}
}

// TestExecutorNodeNameUnderBatchScheduler: an executor pod that names its
// node skips the driver's batch scheduler, so the sidecar refuses it; with
// no batch scheduler it is the pod template's business.
func TestExecutorNodeNameUnderBatchScheduler(t *testing.T) {
	pol := mustPolicy(t, "")
	for _, tc := range []struct {
		driver *corev1.Pod
		refuse bool
	}{
		{injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationQueue, "root.sparklet")), ""), true},
		{injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "lq")), ""), true},
		{injectOK(t, driverPod(), ""), false},
	} {
		ex := executorFor("1", "1408Mi")
		ex.Spec.NodeName = "worker-7"
		_, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(tc.driver), AppID: "spark-test"})
		if refused := err != nil && strings.Contains(err.Error(), `spec.nodeName "worker-7"`); refused != tc.refuse {
			t.Errorf("driver %v: err %v, want a nodeName refusal: %v", tc.driver.Annotations[vocab.AnnotationBatchScheduler], err, tc.refuse)
		}
	}
}
