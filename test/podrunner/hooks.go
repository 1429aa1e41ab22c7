package podrunner

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// postStartExec is c's postStart exec hook, or nil. HTTP and sleep hooks
// are not supported.
func postStartExec(c corev1.Container) *corev1.ExecAction {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	return c.Lifecycle.PostStart.Exec
}

// postStart runs c's postStart exec hook in the container, as the kubelet
// does before it starts the next container: the container counts as
// started only once the hook has exited 0. It reports whether it did.
func (w *podWorker) postStart(ctx context.Context, c *container) bool {
	hook := postStartExec(c.spec)
	if hook == nil {
		return true
	}
	w.mu.Lock()
	spec := c.shim
	w.mu.Unlock()
	return checkExec(ctx, spec, hook.Command)
}
