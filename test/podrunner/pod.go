package podrunner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWorker runs one pod from the moment it is bound to the node until its
// object is deleted, as the kubelet's pod worker does.
type podWorker struct {
	r   *Runner
	uid types.UID

	// ctx ends when the pod is being deleted, is gone or the runner stops:
	// nothing starts or restarts after that.
	ctx    context.Context
	cancel context.CancelFunc
	// Exactly one of these is closed, once, to say why ctx ended.
	deleting, removed, stopping chan struct{}
	endOnce                     sync.Once

	dirty   chan struct{} // the status changed and is to be written
	changed chan struct{} // a newer pod object arrived

	// volMu guards vols, which refreshes call the API under.
	volMu sync.Mutex
	vols  *volumes

	mu          sync.Mutex
	pod         *corev1.Pod // the newest object from the informer
	net         *podNet
	podIP       string
	init, main  []*container
	phase       corev1.PodPhase
	reason      string
	message     string
	initialized bool
	started     metav1.Time
}

func newPodWorker(r *Runner, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		r: r, uid: pod.UID, pod: pod.DeepCopy(),
		deleting: make(chan struct{}), removed: make(chan struct{}), stopping: make(chan struct{}),
		dirty: make(chan struct{}, 1), changed: make(chan struct{}, 1), phase: corev1.PodPending,
		vols: newVolumes(filepath.Join(r.opts.Dir, "pods", string(pod.UID), "volumes")),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for _, c := range pod.Spec.InitContainers {
		role := roleInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			role = roleSidecar
		}
		w.init = append(w.init, newContainer(c, role))
	}
	for _, c := range pod.Spec.Containers {
		w.main = append(w.main, newContainer(c, roleMain))
	}
	return w
}

// update takes a newer object of the pod from the informer.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod.DeepCopy()
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	if pod.DeletionTimestamp != nil {
		w.end(w.deleting)
	}
}

// gone ends a pod deleted from the API without the runner.
func (w *podWorker) gone() { w.end(w.removed) }

// shutdown ends the pod because the runner stops.
func (w *podWorker) shutdown() { w.end(w.stopping) }

func (w *podWorker) end(why chan struct{}) {
	w.endOnce.Do(func() {
		close(why)
		w.cancel()
	})
}

func (w *podWorker) current() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) logf(format string, args ...any) {
	p := w.current()
	w.r.log.Printf("pod %s/%s: %s", p.Namespace, p.Name, fmt.Sprintf(format, args...))
}

// run is the pod's life: network and volumes, the containers in the
// kubelet's order, then, once the pod is deleted, the containers stopped
// within the grace period and the object deleted.
func (w *podWorker) run() {
	pod := w.current()
	if pod.DeletionTimestamp != nil {
		w.end(w.deleting)
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	statusDone := make(chan struct{})
	statusCtx, stopStatus := context.WithCancel(context.Background())
	go func() { defer close(statusDone); w.statusLoop(statusCtx) }()

	if !terminal && w.ctx.Err() == nil {
		w.runContainers()
	}
	select {
	case <-w.deleting:
	case <-w.removed:
	case <-w.stopping:
	}
	w.killAll()
	stopStatus()
	<-statusDone
	select {
	case <-w.deleting:
		if !terminal {
			w.setPhase(w.finalPhase(), "", "")
			w.writeStatusBounded()
		}
		// As the kubelet, only once nothing of the pod is left here.
		w.teardown()
		w.deleteObject()
	default:
		w.teardown()
	}
}

// runContainers sets the pod up and runs its containers until the main
// containers are done for good or the pod ends.
func (w *podWorker) runContainers() {
	w.mu.Lock()
	w.started = metav1.Now()
	w.mu.Unlock()
	w.markDirty()
	if !w.retry("create the pod network", w.setupNetwork) {
		return
	}
	if !w.retry("set up volumes", w.syncVolumes) {
		return
	}
	go w.refreshVolumes()
	if !w.runInit() {
		return
	}
	phase, ok := w.runMain()
	if !ok {
		return
	}
	w.stopSidecars(time.Now().Add(w.gracePeriod()))
	w.setPhase(phase, "", "")
	w.teardownNetwork()
}

// retry calls f until it succeeds, reporting the error as the containers'
// waiting message, or until the pod ends.
func (w *podWorker) retry(what string, f func() error) bool {
	for {
		err := f()
		if err == nil {
			return true
		}
		w.logf("%s: %v", what, err)
		w.mu.Lock()
		for _, c := range w.all() {
			c.state = waiting("ContainerCreating", fmt.Sprintf("%s: %v", what, err))
		}
		w.mu.Unlock()
		w.markDirty()
		select {
		case <-w.ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

func (w *podWorker) setupNetwork() error {
	n, err := w.r.net.addPod()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.net, w.podIP = n, n.ip.String()
	w.mu.Unlock()
	w.markDirty()
	return nil
}

// refreshVolumes rewrites the API-backed volumes when the pod changes and
// every SyncPeriod, as the kubelet does, until the pod ends.
func (w *podWorker) refreshVolumes() {
	t := time.NewTicker(w.r.opts.SyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.changed:
		}
		if err := w.syncVolumes(); err != nil && w.ctx.Err() == nil {
			w.logf("refresh volumes: %v", err)
		}
	}
}

func (w *podWorker) syncVolumes() error {
	w.volMu.Lock()
	defer w.volMu.Unlock()
	return w.vols.sync(w.ctx, w.r, w.current())
}

// runInit runs the init containers one by one; a native sidecar is started
// and must report started (its startup probe passed) before the next one.
// It reports whether the main containers may start.
func (w *podWorker) runInit() bool {
	for _, c := range w.init {
		if c.role == roleSidecar {
			go w.supervise(c, corev1.RestartPolicyAlways)
			if !w.waitStarted(c) {
				return false
			}
			continue
		}
		code, ok := w.runToCompletion(c)
		if !ok {
			return false
		}
		if code != 0 {
			w.stopSidecars(time.Now().Add(w.gracePeriod()))
			w.setPhase(corev1.PodFailed, "", fmt.Sprintf("init container %s exited with code %d", c.spec.Name, code))
			w.teardownNetwork()
			return false
		}
	}
	w.mu.Lock()
	w.initialized = true
	w.mu.Unlock()
	w.markDirty()
	return true
}

// runToCompletion runs an init container until it exits 0 or, with the
// pod's restartPolicy Never, until it fails; ok is false if the pod ended.
func (w *podWorker) runToCompletion(c *container) (code int, ok bool) {
	restart := corev1.RestartPolicyOnFailure
	if w.current().Spec.RestartPolicy == corev1.RestartPolicyNever {
		restart = corev1.RestartPolicyNever
	}
	code = w.supervise(c, restart)
	return code, w.ctx.Err() == nil
}

func (w *podWorker) waitStarted(c *container) bool {
	for {
		w.mu.Lock()
		started, ch := c.started, c.changed
		w.mu.Unlock()
		if started {
			return true
		}
		select {
		case <-ch:
		case <-w.ctx.Done():
			return false
		}
	}
}

// runMain runs the main containers under the pod's restartPolicy until all
// are done for good: the pod Succeeded if all exited 0, else Failed.
func (w *podWorker) runMain() (corev1.PodPhase, bool) {
	policy := w.current().Spec.RestartPolicy
	codes := make([]int, len(w.main))
	var wg sync.WaitGroup
	for i, c := range w.main {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = w.supervise(c, policy) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-w.ctx.Done():
		return "", false
	}
	if w.ctx.Err() != nil {
		return "", false
	}
	for _, code := range codes {
		if code != 0 {
			return corev1.PodFailed, true
		}
	}
	return corev1.PodSucceeded, true
}

// finalPhase is the phase of a deleted pod once its containers are
// stopped: Succeeded if every main container exited 0, else Failed.
func (w *podWorker) finalPhase() corev1.PodPhase {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.main {
		if t := c.state.Terminated; t == nil || t.ExitCode != 0 {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}

func (w *podWorker) setPhase(phase corev1.PodPhase, reason, message string) {
	w.mu.Lock()
	w.phase, w.reason, w.message = phase, reason, message
	w.mu.Unlock()
	w.markDirty()
}

// gracePeriod is the deletion's grace period, else the pod's
// terminationGracePeriodSeconds (default 30).
func (w *podWorker) gracePeriod() time.Duration {
	p := w.current()
	switch {
	case p.DeletionGracePeriodSeconds != nil:
		return time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
	case p.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// killAll stops every container as the kubelet does: the main containers
// together, then the sidecars in reverse order, SIGTERM first and SIGKILL
// at the end of the grace period (2 seconds when the runner stops or the
// pod is already gone).
func (w *podWorker) killAll() {
	grace := w.gracePeriod()
	select {
	case <-w.deleting:
	default:
		grace = 2 * time.Second
	}
	deadline := time.Now().Add(grace)
	var wg sync.WaitGroup
	for _, c := range w.main {
		wg.Add(1)
		go func() { defer wg.Done(); w.kill(c, deadline) }()
	}
	for _, c := range w.init {
		if c.role != roleSidecar {
			wg.Add(1)
			go func() { defer wg.Done(); w.kill(c, deadline) }()
		}
	}
	wg.Wait()
	w.stopSidecars(deadline)
}

// stopSidecars stops the native sidecars in reverse order, each with at
// least 2 seconds.
func (w *podWorker) stopSidecars(deadline time.Time) {
	for i := len(w.init) - 1; i >= 0; i-- {
		if c := w.init[i]; c.role == roleSidecar {
			d := deadline
			if min := time.Now().Add(2 * time.Second); d.Before(min) {
				d = min
			}
			w.kill(c, d)
		}
	}
}

// deleteObject deletes the pod object with grace 0, as the kubelet does
// once its containers are gone.
func (w *podWorker) deleteObject() {
	p := w.current()
	err := w.r.client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(p.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.logf("delete: %v", err)
	}
}

func (w *podWorker) teardownNetwork() {
	w.mu.Lock()
	n := w.net
	w.net = nil
	w.mu.Unlock()
	if n != nil {
		w.r.net.removePod(n)
	}
}

func (w *podWorker) teardown() {
	w.teardownNetwork()
	w.volMu.Lock()
	defer w.volMu.Unlock()
	if err := w.vols.teardown(); err != nil {
		w.r.log.Printf("pod %s: remove volumes: %v", w.uid, err)
	}
}

func (w *podWorker) all() []*container {
	return append(append([]*container(nil), w.init...), w.main...)
}
