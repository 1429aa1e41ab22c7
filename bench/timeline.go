package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podTimes is when a watch first saw a pod, saw it scheduled, Running,
// and Succeeded or Failed.
type podTimes struct {
	role                           string
	seen, scheduled, running, done time.Time
	failed                         string
}

// timeline follows the pods of one namespace through a watch and keeps
// each pod's times; it wakes waiters on every change.
type timeline struct {
	mu      sync.Mutex
	pods    map[string]*podTimes
	changed chan struct{}
	started chan struct{}
	err     error
	cancel  context.CancelFunc
}

func newTimeline() *timeline {
	return &timeline{pods: map[string]*podTimes{}, changed: make(chan struct{}), started: make(chan struct{})}
}

// follow watches ns's pods until stop or ctx ends.
func (t *timeline) follow(ctx context.Context, c kubernetes.Interface, ns string) {
	ctx, t.cancel = context.WithCancel(ctx)
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.fail(err)
		close(t.started)
		return
	}
	close(t.started)
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		now := time.Now()
		t.mu.Lock()
		pt := t.pods[p.Name]
		if pt == nil {
			pt = &podTimes{role: p.Labels["spark-role"], seen: now}
			t.pods[p.Name] = pt
		}
		if pt.scheduled.IsZero() && p.Spec.NodeName != "" {
			pt.scheduled = now
		}
		if pt.running.IsZero() && p.Status.Phase == corev1.PodRunning {
			pt.running = now
		}
		if pt.done.IsZero() && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			pt.done = now
			if p.Status.Phase == corev1.PodFailed {
				pt.failed = fmt.Sprintf("%s %s", p.Status.Reason, p.Status.Message)
			}
		}
		t.wake()
		t.mu.Unlock()
	}
	if ctx.Err() == nil {
		t.fail(fmt.Errorf("the watch of %s's pods ended", ns))
	}
}

func (t *timeline) fail(err error) {
	t.mu.Lock()
	t.err = err
	t.wake()
	t.mu.Unlock()
}

// wake tells waiters something changed; t.mu is held.
func (t *timeline) wake() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *timeline) waitStarted(ctx context.Context) error {
	select {
	case <-t.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *timeline) stop() { t.cancel() }

// waitDriver waits for the pod name to succeed and returns its times.
func (t *timeline) waitDriver(ctx context.Context, name string) (podTimes, error) {
	for {
		t.mu.Lock()
		changed, err := t.changed, t.err
		var pt podTimes
		if p := t.pods[name]; p != nil {
			pt = *p
		}
		t.mu.Unlock()
		switch {
		case err != nil:
			return pt, err
		case pt.failed != "":
			return pt, fmt.Errorf("driver pod %s failed: %s", name, pt.failed)
		case !pt.done.IsZero():
			return pt, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return pt, fmt.Errorf("driver pod %s never Succeeded: %w", name, ctx.Err())
		}
	}
}

// firstExecutor is when the first executor pod was seen and when the
// first was Running, from start.
func (t *timeline) firstExecutor(start time.Time) (created, running time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c, r time.Time
	for _, p := range t.pods {
		if p.role != "executor" {
			continue
		}
		if c.IsZero() || p.seen.Before(c) {
			c = p.seen
		}
		if !p.running.IsZero() && (r.IsZero() || p.running.Before(r)) {
			r = p.running
		}
	}
	if r.IsZero() {
		return c.Sub(start), 0
	}
	return c.Sub(start), r.Sub(start)
}
