package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/vocab"
)

// endStatusWait is how long a sidecar asked to stop waits for the Spark
// container's termination to reach it: the kubelet stops native sidecars
// once the main containers have exited, and writes their status
// asynchronously (pkg/kubelet/status, Kubernetes 1.37).
const endStatusWait = 5 * time.Second

// reportEnd classifies how the application ended and records it on the
// driver pod: an Event whose reason is the class, the annotation
// sparklet.io/ended, and the condition sparklet.io/<class>. It runs before
// the sidecar exits, and the kubelet makes a pod terminal only once none
// of its containers can be running (mergePodStatus, couldHaveRunningContainers,
// pkg/kubelet/status/status_manager.go, 1.37), so the condition is there
// when a Job's controller matches its podFailurePolicy against the failed
// pod. The kubelet keeps every condition type it does not own
// (PodConditionByKubelet, pkg/kubelet/types/pod_status.go).
func (s *Sidecar) reportEnd() ending {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CleanupTimeout)
	defer cancel()
	pod, facts := s.endFacts(ctx)
	e := classify(facts)
	log := s.log.WithField("class", e.class)
	if earlier, ok := recordedEnd(pod); ok {
		// A sidecar restarted after the end: the first one saw more.
		log.Info("the application's end was recorded already: " + earlier)
		return e
	}
	if e.failed() {
		s.events.warning(e.class, e.message)
		log.Warn("the application ended: " + e.message)
	} else {
		s.events.normal(e.class, e.message)
		log.Info("the application ended: " + e.message)
	}
	// Only an end is written on the pod: a sidecar stopped while the
	// Spark container runs on a pod that is not being deleted is
	// restarted by the kubelet, and it will see the end.
	if pod != nil && (facts.spark != nil || facts.deleting) {
		s.writeEnd(ctx, pod, e)
	}
	return e
}

// recordedEnd is the end an earlier sidecar wrote on the pod, if any.
func recordedEnd(pod *corev1.Pod) (string, bool) {
	if pod == nil {
		return "", false
	}
	v, ok := pod.Annotations[vocab.AnnotationEnded]
	return v, ok
}

// writeEnd writes the annotation and the condition on the driver pod.
// Each patch names the pod's UID, which the API server refuses to change
// (as the kubelet's status patches do), so that a new pod of the same
// name is never written.
func (s *Sidecar) writeEnd(ctx context.Context, pod *corev1.Pod, e ending) {
	cond := corev1.PodCondition{Type: corev1.PodConditionType(vocab.ConditionPrefix + e.class), Status: corev1.ConditionTrue,
		Reason: e.class, Message: e.message, LastTransitionTime: metav1.Now()}
	for _, w := range []struct {
		what        string
		subresource []string
		patch       map[string]any
	}{
		{"the annotation " + vocab.AnnotationEnded, nil, map[string]any{"metadata": map[string]any{"uid": pod.UID,
			"annotations": map[string]string{vocab.AnnotationEnded: e.class + ": " + e.message}}}},
		{"the condition " + string(cond.Type) + " (RBAC: patch on pods/status)", []string{"status"}, map[string]any{
			"metadata": map[string]any{"uid": pod.UID}, "status": map[string]any{"conditions": []corev1.PodCondition{cond}}}},
	} {
		body, _ := json.Marshal(w.patch)
		_, err := s.client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body,
			metav1.PatchOptions{FieldManager: fieldManager}, w.subresource...)
		switch {
		case apierrors.IsNotFound(err):
			s.log.Info("the driver pod is gone: " + w.what + " not written")
		case err != nil:
			msg := fmt.Sprintf("could not write %s on the driver pod: %v", w.what, err)
			s.log.Warn(msg)
			s.events.warning("EndNotRecorded", msg)
		}
	}
}

// endFacts gathers what classify reads: the driver pod as the informer
// has it last, or as the API server has it when its Spark container has
// not ended there yet, and what the allocator and the executors' informer
// saw. pod is nil when neither has the driver pod.
func (s *Sidecar) endFacts(ctx context.Context) (*corev1.Pod, endFacts) {
	var f endFacts
	if s.api == nil {
		return nil, f
	}
	f.executors = s.api.state.ends.close()
	f.quota, f.policy = s.api.alloc.refusals()
	f.deadline = s.api.state.ends.deadline
	own := func(p *corev1.Pod) bool { return p != nil && p.UID == s.driver.Pod.UID } // not a new pod of the same name
	var pod *corev1.Pod
	if c, ok := s.api.state.driverSource.get(s.cfg.PodName); ok && own(c.pod) {
		pod = c.pod
	}
	if pod == nil || sparkTermination(pod, s.cfg.SparkContainer) == nil {
		if fresh, err := s.client.Pods(s.cfg.Namespace).Get(ctx, s.cfg.PodName, metav1.GetOptions{}); err == nil && own(fresh) {
			pod = fresh
		}
	}
	if pod == nil {
		return nil, f
	}
	f.spark = sparkTermination(pod, s.cfg.SparkContainer)
	f.deleting = pod.DeletionTimestamp != nil
	f.exception = pod.Annotations[vocab.AnnotationExitException]
	return pod, f
}

// sparkTermination is the Spark container's termination, nil while it
// runs.
func sparkTermination(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Terminated
		}
	}
	return nil
}
