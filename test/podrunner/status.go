package podrunner

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// markDirty asks the status loop to write the pod's status.
func (w *podWorker) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// statusLoop writes the status each time it changes until ctx ends. A
// failed write (the API server restarting, a conflict) is retried.
func (w *podWorker) statusLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.dirty:
		}
		for {
			err := w.writeStatus(ctx)
			if err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil {
				break
			}
			w.logf("write status (will retry): %v", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// writeStatusBounded writes the final status, retrying for up to 30 s.
func (w *podWorker) writeStatusBounded() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		err := w.writeStatus(ctx)
		if err == nil || apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// writeStatus reads the pod and writes the status rendered over it
// through the status subresource.
func (w *podWorker) writeStatus(ctx context.Context) error {
	p := w.current()
	pods := w.r.client.CoreV1().Pods(p.Namespace)
	pod, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pod.UID != w.uid {
		return apierrors.NewNotFound(corev1.Resource("pods"), p.Name)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil // terminal is final
	}
	pod.Status = w.render(pod.Status)
	_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "podrunner"})
	return err
}

// render is the pod's status as the kubelet would report it now, over the
// stored one (whose other conditions, such as PodScheduled, stay).
func (w *podWorker) render(old corev1.PodStatus) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := *old.DeepCopy()
	st.Phase, st.Reason, st.Message = w.phase, w.reason, w.message
	st.HostIP = w.r.HostIP()
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	if w.podIP != "" {
		st.PodIP = w.podIP
		st.PodIPs = []corev1.PodIP{{IP: w.podIP}}
	}
	if !w.started.IsZero() {
		st.StartTime = &w.started
	}
	st.InitContainerStatuses = nil
	for _, c := range w.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status())
	}
	st.ContainerStatuses = nil
	var unready []string
	for _, c := range w.main {
		st.ContainerStatuses = append(st.ContainerStatuses, c.status())
		if !c.ready {
			unready = append(unready, c.spec.Name)
		}
	}
	var uninitialized []string
	for _, c := range w.init {
		s := c.status()
		switch {
		case c.role == roleSidecar && !c.ready:
			unready = append(unready, c.spec.Name)
			if !c.started && !w.initialized {
				uninitialized = append(uninitialized, c.spec.Name)
			}
		case c.role == roleInit && !w.initialized && (s.State.Terminated == nil || s.State.Terminated.ExitCode != 0):
			uninitialized = append(uninitialized, c.spec.Name)
		}
	}
	terminal := w.phase == corev1.PodSucceeded || w.phase == corev1.PodFailed
	now := metav1.Now()
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		cond := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: now}
		if ok {
			cond.Status = corev1.ConditionTrue
		} else {
			cond.Reason, cond.Message = reason, message
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status == cond.Status {
					cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
				}
				st.Conditions[i] = cond
				return
			}
		}
		st.Conditions = append(st.Conditions, cond)
	}
	set(corev1.PodReadyToStartContainers, w.net != nil, "", "")
	set(corev1.PodInitialized, w.initialized, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(uninitialized, " ")))
	notReady := "ContainersNotReady"
	if terminal {
		notReady = "PodCompleted"
		unready = nil
		for _, c := range w.main {
			unready = append(unready, c.spec.Name)
		}
	}
	msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	set(corev1.ContainersReady, !terminal && len(unready) == 0, notReady, msg)
	set(corev1.PodReady, !terminal && len(unready) == 0, notReady, msg)
	return st
}

// status is c's ContainerStatus; called with the worker's mu held.
func (c *container) status() corev1.ContainerStatus {
	started := c.started
	s := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image,
		State: c.state, LastTerminationState: c.last, RestartCount: c.restarts,
		Ready: c.ready, Started: &started,
	}
	if c.state.Running != nil || c.state.Terminated != nil {
		s.ContainerID = c.id
	}
	if c.role == roleInit && c.state.Terminated != nil && c.state.Terminated.ExitCode == 0 {
		s.Ready = true
	}
	return *s.DeepCopy()
}
