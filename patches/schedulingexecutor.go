package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	podresource "k8s.io/component-helpers/resource"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// stampScheduling puts on an executor what its driver's batch scheduler
// needs to count it with the application:
//
//   - YuniKorn: the scheduler name, the driver's application id and queue
//     labels, and the executor task group, so that the executor replaces
//     one of the gang's placeholders.
//   - Kueue: the LocalQueue and priority-class labels, the managed label,
//     and pod-suspending-parent, without which Kueue lets a pod owned by a
//     Kueue-managed pod through without quota (FindAncestorJobManagedByKueue
//     in kueue v0.19.2 pkg/controller/jobframework/reconciler.go; Kueue's
//     guide "Run spark-submit as a plain pod").
func stampScheduling(pod *corev1.Pod, d *DriverFacts) error {
	if d.Pod == nil {
		return nil
	}
	if d.SchedulingErr != nil {
		return d.SchedulingErr
	}
	s, driver := d.Scheduling, d.Pod
	if s == nil {
		return nil
	}
	if n := pod.Spec.NodeName; n != "" {
		return &Refused{Reason: "bad-scheduling", Message: fmt.Sprintf(
			"executor %q: spec.nodeName %q places it on a node without a scheduler, so the driver's batch scheduler %s never sees it; "+
				"remove nodeName from the executor pod template", pod.Name, n, s.Scheduler)}
	}
	switch s.Scheduler {
	case policy.SchedulerYuniKorn:
		pod.Spec.SchedulerName = policy.SchedulerYuniKorn
		pod.Labels[yunikornAppID] = driver.Labels[yunikornAppID]
		if q := driver.Labels[yunikornQueue]; q != "" {
			pod.Labels[yunikornQueue] = q
		}
		if s.Executors > 0 {
			setAnnotation(pod, yunikornTaskGroupName, executorTaskGroup)
		}
		if s.PriorityClassName != "" && pod.Spec.PriorityClassName == "" {
			pod.Spec.PriorityClassName = s.PriorityClassName
		}
	case policy.SchedulerKueue:
		pod.Labels[kueueQueueName] = s.Queue
		pod.Labels[kueueManaged] = "true"
		if s.PriorityClassName != "" {
			pod.Labels[kueuePriorityClass] = s.PriorityClassName
		}
		setAnnotation(pod, kueueSuspendingParent, driverTaskGroup)
	default:
		return &Refused{Reason: "bad-scheduling", Message: fmt.Sprintf(
			"the driver's annotation %s names the scheduler %q, which this sidecar does not know", vocab.AnnotationScheduling, s.Scheduler)}
	}
	return nil
}

// beyondGang says, for an executor pod ready to be created, how it exceeds
// the executor size of its driver's YuniKorn gang; empty when it fits or
// when there is no gang. YuniKorn releases a placeholder rather than let a
// larger pod take its place (tryPlaceholderAllocate in yunikorn-core
// v1.9.0 pkg/scheduler/objects/application.go), so such an executor is
// scheduled outside the gang's reservation.
func beyondGang(pod *corev1.Pod, d *DriverFacts) string {
	size, ok := d.gangExecutor()
	if !ok {
		return ""
	}
	over := Exceeds(requestsAsAdmitted(pod), size)
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("executors ask for more than the gang's executor size (%s), so YuniKorn releases a placeholder for each and schedules it outside the gang; "+
		"size the executors in the driver's Spark conf, where sparklet reads them at admission", strings.Join(over, ", "))
}

// requestsAsAdmitted is the pod's requests once the API server has
// defaulted each container's missing requests from its limits.
func requestsAsAdmitted(pod *corev1.Pod) corev1.ResourceList {
	p := pod.DeepCopy()
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			r := &list[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q
				}
			}
		}
	}
	return podresource.PodRequests(p, podresource.PodResourcesOptions{})
}
