package sidecar

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// executorFailure is how one executor pod failed, as its pod says.
type executorFailure struct {
	// reason is what failures are counted by: OOMKilled, exit code 1,
	// Evicted...
	reason string
	// detail is what the pod adds, such as an eviction's message.
	detail string
	oom    bool
}

// failureOf reads how an executor pod failed; nil while it has not. A
// pod that restarts no container fails when one of its containers ends
// non-zero, before its phase says so: the kubelet writes the terminal
// phase only once it has stopped the whole pod (mergePodStatus,
// pkg/kubelet/status/status_manager.go, Kubernetes 1.37), while Spark
// takes such a Running pod as failed at once and deletes it
// (ExecutorPodsSnapshot.toState, 3.5.9 to 4.3.0), often before the
// phase changes.
func failureOf(pod *corev1.Pod) *executorFailure {
	if pod.Status.Reason == "Evicted" {
		return &executorFailure{reason: "Evicted", detail: pod.Status.Message}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &executorFailure{reason: "disrupted (" + c.Reason + ")", detail: c.Message}
		}
	}
	if pod.Status.Phase != corev1.PodFailed && !endedNonZero(pod) {
		return nil
	}
	for _, s := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		t := s.State.Terminated
		switch {
		case t == nil:
		case t.Reason == "OOMKilled":
			return &executorFailure{reason: "OOMKilled", oom: true}
		case t.ExitCode == exitCodeOOM:
			return &executorFailure{reason: "OutOfMemoryError (exit code 52)", oom: true}
		case t.ExitCode != 0:
			return &executorFailure{reason: exitCode(t.ExitCode), detail: t.Message}
		}
	}
	return &executorFailure{reason: "Failed", detail: strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)}
}

// endedNonZero tells whether a pod that restarts no container has one
// that ended with a non-zero exit code.
func endedNonZero(pod *corev1.Pod) bool {
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return false
	}
	return slices.ContainsFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool {
		return s.State.Terminated != nil && s.State.Terminated.ExitCode != 0
	})
}

// unschedulableOf is why the scheduler has not placed a pod, from its
// PodScheduled condition; "" once placed or before it tried.
func unschedulableOf(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return ""
}

// failureCounts is what the sidecar saw of an application's executors:
// the failed ones counted by reason, whether any ran, whether any was
// scheduled.
type failureCounts struct {
	total int
	oom   []string // the OOM-lost executors' names, the first few
	nOOM  int
	// ran is set once any executor has been seen Running, scheduled once
	// any has had a node.
	ran, scheduled bool
	// waited is how long the first executor waited with none scheduled,
	// unschedulable the scheduler's last word on why (at close).
	waited        time.Duration
	unschedulable string
	reasons       map[string]*reasonCount
}

type reasonCount struct {
	n      int
	names  []string // the first few
	detail string   // the first executor's
}

// namesKept is how many executor names an Event names per reason.
const namesKept = 3

func (f *failureCounts) add(name string, e *executorFailure) {
	f.total++
	if e.oom {
		f.nOOM++
		if len(f.oom) < namesKept {
			f.oom = append(f.oom, name+" "+e.reason)
		}
	}
	if f.reasons == nil {
		f.reasons = map[string]*reasonCount{}
	}
	r := f.reasons[e.reason]
	if r == nil {
		r = &reasonCount{detail: firstLine(e.detail)}
		f.reasons[e.reason] = r
	}
	r.n++
	if len(r.names) < namesKept {
		r.names = append(r.names, name)
	}
}

// summary is one line on every reason, the most frequent first.
func (f *failureCounts) summary() string {
	keys := slices.SortedFunc(maps.Keys(f.reasons), func(a, b string) int {
		return cmp.Or(cmp.Compare(f.reasons[b].n, f.reasons[a].n), cmp.Compare(a, b))
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		r := f.reasons[k]
		names := strings.Join(r.names, ", ")
		if r.n > len(r.names) {
			names += ", ..."
		}
		p := fmt.Sprintf("%d %s (%s)", r.n, k, names)
		if r.detail != "" {
			p += ": " + r.detail
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%d executor(s) failed: %s", f.total, strings.Join(parts, "; "))
}

// oomNames names the first executors lost to OOM.
func (f *failureCounts) oomNames() string {
	s := strings.Join(f.oom, ", ")
	if f.nOOM > len(f.oom) {
		s += ", ..."
	}
	return s
}

// note is the failures as an aside to a success.
func (f *failureCounts) note() string {
	if f.total == 0 {
		return ""
	}
	return "; on the way " + f.summary()
}

// failedEventEvery spaces the ExecutorsFailed Events, each of which
// counts every failure so far.
const failedEventEvery = 30 * time.Second

// executorEnds follows this application's executors through their
// informer and counts those that failed, for an ExecutorsFailed Event on
// the driver pod rather than one per executor. An executor the JVM
// deleted (a downscale, the application's stop) did not fail; one deleted
// by anyone else did.
type executorEnds struct {
	events *recorder
	every  time.Duration
	// deadline is how long the first executor may wait for a node before
	// an ExecutorsNotScheduled Event (policy
	// sidecar.executorScheduleDeadlineSeconds).
	deadline time.Duration

	mu         sync.Mutex
	released   map[string]bool // executors the JVM deleted
	counted    map[string]bool
	counts     failureCounts
	timer      *time.Timer
	lastEvent  time.Time
	unreported bool
	closed     bool
	firstSeen  time.Time // the first executor, while none is scheduled
	overdue    *time.Timer
}

func newExecutorEnds(events *recorder, deadline time.Duration) *executorEnds {
	return &executorEnds{events: events, every: failedEventEvery, deadline: deadline, released: map[string]bool{}, counted: map[string]bool{}}
}

// release marks executors the JVM is deleting.
func (e *executorEnds) release(names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range names {
		e.released[n] = true
	}
}

func (e *executorEnds) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.observe(obj, false) },
		UpdateFunc: func(_, obj any) { e.observe(obj, false) },
		DeleteFunc: func(obj any) { e.observe(obj, true) },
	}
}

// observe counts an executor the first time a version of it shows a
// failure, or shows it deleted by someone other than the JVM before it
// ended.
func (e *executorEnds) observe(obj any, gone bool) {
	c, ok := cachedOf(obj)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.Phase == corev1.PodRunning {
		e.counts.ran = true
	}
	if e.closed {
		return
	}
	e.followScheduling(c)
	if e.counted[c.Name] {
		return
	}
	f := c.failure
	deleted := gone || c.DeletionTimestamp != nil
	switch {
	case deleted && e.released[c.Name]:
		return
	case f == nil && deleted && c.Phase != corev1.PodSucceeded && c.Phase != corev1.PodFailed:
		f = &executorFailure{reason: "deleted while " + strings.ToLower(string(cmp.Or(c.Phase, corev1.PodPending)))}
	case f == nil:
		return
	}
	e.counted[c.Name] = true
	e.counts.add(c.Name, f)
	e.unreported = true
	if e.timer == nil {
		e.timer = time.AfterFunc(max(0, e.every-time.Since(e.lastEvent)), e.report)
	}
}

// followScheduling notes whether any executor has had a node, and why
// not; the first executor seen unscheduled starts the deadline.
func (e *executorEnds) followScheduling(c *cachedPod) {
	switch {
	case e.counts.scheduled:
	case c.NodeName != "":
		e.counts.scheduled = true
		if e.overdue != nil {
			e.overdue.Stop()
		}
	case c.DeletionTimestamp != nil:
	default:
		if c.unschedulable != "" {
			e.counts.unschedulable = c.unschedulable
		}
		if e.firstSeen.IsZero() {
			e.firstSeen = time.Now()
			e.overdue = time.AfterFunc(e.deadline, e.warnOverdue)
		}
	}
}

// warnOverdue says, once, that no executor was scheduled in time.
func (e *executorEnds) warnOverdue() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts.scheduled || e.closed {
		return
	}
	e.events.warning("ExecutorsNotScheduled", fmt.Sprintf("no executor of this application has been scheduled within %s "+
		"(policy sidecar.executorScheduleDeadlineSeconds)%s", e.deadline, schedulerSays(e.counts.unschedulable)))
}

func schedulerSays(why string) string {
	if why == "" {
		return ""
	}
	return "; the scheduler says " + firstLine(why)
}

// report writes the ExecutorsFailed Event if a failure is not in one yet.
func (e *executorEnds) report() {
	e.mu.Lock()
	e.timer = nil
	if !e.unreported {
		e.mu.Unlock()
		return
	}
	e.unreported, e.lastEvent = false, time.Now()
	msg := e.counts.summary()
	e.mu.Unlock()
	e.events.warning("ExecutorsFailed", msg)
}

// close stops counting, reports what no Event has yet, and returns the
// final counts.
func (e *executorEnds) close() failureCounts {
	e.mu.Lock()
	e.closed = true
	if e.timer != nil {
		e.timer.Stop()
	}
	if e.overdue != nil {
		e.overdue.Stop()
	}
	if !e.counts.scheduled && !e.firstSeen.IsZero() {
		e.counts.waited = time.Since(e.firstSeen)
	}
	e.mu.Unlock()
	e.report()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts
}
