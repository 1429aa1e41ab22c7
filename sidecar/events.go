package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// eventUpdateEvery spaces the writes of a repeated Event.
const eventUpdateEvery = 10 * time.Second

// recorder writes Events on the driver pod, so `kubectl describe pod`
// tells what the sidecar did. Repeats of one type and reason fold into one
// Event, as client-go's EventCorrelator folds repeats into a count
// (tools/record/events_cache.go, client-go v0.31.0): its count and
// lastTimestamp grow and its message is the latest. After the first write
// a series is written at most once per updateEvery, so a JVM that retries
// a refused executor every second (ExecutorPodsAllocator's
// spark.kubernetes.allocation.batch.delay, Spark v3.5.0 and v4.0.0) costs
// the API server one write per period, not one per retry.
type recorder struct {
	client kubernetes.Interface
	driver *corev1.Pod
	log    *logrus.Entry
	// updateEvery is eventUpdateEvery unless a test sets it.
	updateEvery time.Duration

	mu     sync.Mutex
	series map[string]*eventSeries
}

// eventSeries is one Event and the repeats not yet written to it.
type eventSeries struct {
	kind, reason string
	name         string // the Event's, once created
	count        int32
	message      string
	first, last  time.Time
	written      time.Time // when the Event was last written
	writing      bool      // a write is running or scheduled
	dirty        bool      // repeats since the last write began
}

func (r *recorder) normal(reason, msg string)  { r.emit(corev1.EventTypeNormal, reason, msg) }
func (r *recorder) warning(reason, msg string) { r.emit(corev1.EventTypeWarning, reason, msg) }

// emit records one occurrence. The first of a series is written before
// emit returns; repeats are written by the series' pending write.
func (r *recorder) emit(kind, reason, msg string) {
	if r == nil || r.driver == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if r.series == nil {
		r.series = map[string]*eventSeries{}
	}
	s := r.series[kind+"/"+reason]
	if s == nil {
		s = &eventSeries{kind: kind, reason: reason, first: now}
		r.series[kind+"/"+reason] = s
	}
	s.count++
	s.message, s.last, s.dirty = msg, now, true
	if s.writing {
		r.mu.Unlock()
		return
	}
	s.writing = true
	wait := r.every() - now.Sub(s.written)
	first := s.written.IsZero()
	r.mu.Unlock()
	if first || wait <= 0 {
		r.write(s)
		return
	}
	time.AfterFunc(wait, func() { r.write(s) })
}

func (r *recorder) every() time.Duration {
	if r.updateEvery > 0 {
		return r.updateEvery
	}
	return eventUpdateEvery
}

// write creates or updates the series' Event with what it has seen, and
// schedules the next write if repeats arrived meanwhile.
func (r *recorder) write(s *eventSeries) {
	r.mu.Lock()
	name, count, msg, first, last := s.name, s.count, s.message, s.first, s.last
	s.dirty = false
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if name != "" {
		err = r.update(ctx, name, count, msg, last)
		if apierrors.IsNotFound(err) { // expired (the API server's --event-ttl)
			name = ""
		}
	}
	if name == "" {
		name, err = r.create(ctx, s.kind, s.reason, count, msg, first, last)
	}
	if err != nil {
		r.log.WithError(err).WithField("reason", s.reason).Warn(fmt.Sprintf("could not record event: %s", msg))
	}

	r.mu.Lock()
	s.name, s.written = name, time.Now()
	again := s.dirty
	s.writing = again
	r.mu.Unlock()
	if again {
		time.AfterFunc(r.every(), func() { r.write(s) })
	}
}

func (r *recorder) create(ctx context.Context, kind, reason string, count int32, msg string, first, last time.Time) (string, error) {
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", r.driver.Name, first.UnixNano()), Namespace: r.driver.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: r.driver.Name, Namespace: r.driver.Namespace, UID: r.driver.UID,
		},
		Reason: reason, Message: msg, Type: kind,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last), Count: count,
		Source: corev1.EventSource{Component: "sparklet-sidecar"},
	}
	if _, err := r.client.CoreV1().Events(r.driver.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	return ev.Name, nil
}

// update patches count, lastTimestamp and message, as client-go's
// recorder patches a repeated Event.
func (r *recorder) update(ctx context.Context, name string, count int32, msg string, last time.Time) error {
	patch, err := json.Marshal(map[string]any{"count": count, "message": msg, "lastTimestamp": metav1.NewTime(last)})
	if err != nil {
		return err
	}
	_, err = r.client.CoreV1().Events(r.driver.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
