package sidecar

import (
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/sparklet/sparklet/internal/kubecore"
)

// eventQueue bounds the Events waiting to be written; past it they are
// dropped and logged, as client-go's broadcaster drops when its queue is full.
const eventQueue = 1000

// recorder writes Events on the driver pod, so `kubectl describe pod`
// tells what the sidecar did. client-go's EventCorrelator
// (tools/record/events_cache.go, client-go v0.36) folds them: a repeat of
// an Event (same reason and message) becomes a count and lastTimestamp
// patch on it, similar Events with changing messages are combined after 10
// in 10 minutes, and each reason is rate limited (25 at once, then one
// every 5 minutes). Callers never wait for the API server: emit only
// queues, and one goroutine writes, as client-go's broadcaster does
// (tools/record/event.go, recordToSink); flush queues a marker and waits
// for the writer to reach it, so the last Events are written before the
// sidecar exits.
type recorder struct {
	sink       record.EventSink
	correlator *record.EventCorrelator
	driver     *corev1.Pod
	log        *logrus.Entry
	queue      chan queued
}

// queued is an Event to write, or a flush's marker: the writer closes
// flushed when it reaches it.
type queued struct {
	event   *corev1.Event
	flushed chan struct{}
}

func newRecorder(client kubecore.Interface, driver *corev1.Pod, log *logrus.Entry) *recorder {
	r := &recorder{
		sink: eventSink{client},
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
			// The default key is the source and object only, so one
			// reason's refusals would silence every other reason.
			SpamKeyFunc: func(e *corev1.Event) string { return e.Type + "/" + e.Reason },
		}),
		driver: driver, log: log,
		queue: make(chan queued, eventQueue),
	}
	go r.run()
	return r
}

func (r *recorder) normal(reason, msg string)  { r.emit(corev1.EventTypeNormal, reason, msg) }
func (r *recorder) warning(reason, msg string) { r.emit(corev1.EventTypeWarning, reason, msg) }

// emit queues one Event; it never blocks.
func (r *recorder) emit(kind, reason, msg string) {
	if r == nil {
		return
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", r.driver.Name, now.UnixNano()), Namespace: r.driver.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: r.driver.Name, Namespace: r.driver.Namespace, UID: r.driver.UID,
		},
		Reason: reason, Message: msg, Type: kind,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: corev1.EventSource{Component: "sparklet-sidecar"},
	}
	select {
	case r.queue <- queued{event: ev}:
	default:
		r.log.WithField("reason", reason).Warn("event queue full, dropped: " + msg)
	}
}

func (r *recorder) run() {
	for q := range r.queue {
		if q.flushed != nil {
			close(q.flushed)
			continue
		}
		r.write(q.event)
	}
}

// write correlates one Event and creates it, or patches the Event it
// repeats.
func (r *recorder) write(ev *corev1.Event) {
	result, err := r.correlator.EventCorrelate(ev)
	if err != nil {
		r.log.WithError(err).Warn("correlate event")
	}
	if result == nil || result.Skip {
		return
	}
	var out *corev1.Event
	if result.Event.Count > 1 {
		out, err = r.sink.Patch(result.Event, result.Patch)
	}
	if result.Event.Count <= 1 || apierrors.IsNotFound(err) { // new, or expired (--event-ttl)
		result.Event.ResourceVersion = ""
		out, err = r.sink.Create(result.Event)
	}
	if err != nil {
		r.log.WithError(err).WithField("reason", ev.Reason).Warn("could not record event: " + ev.Message)
		return
	}
	r.correlator.UpdateState(out)
}

// flush waits up to timeout for the queued Events to be written.
func (r *recorder) flush(timeout time.Duration) {
	if r == nil {
		return
	}
	flushed := make(chan struct{})
	deadline := time.After(timeout)
	select {
	case r.queue <- queued{flushed: flushed}:
		select {
		case <-flushed:
			return
		case <-deadline:
		}
	case <-deadline:
	}
	r.log.Warn("events not all written before exit")
}

// eventMessage drops an executor's name from a message, so that the
// refusals of the executors the JVM retries under new names repeat one
// Event instead of starting new ones.
func eventMessage(msg, name string) string {
	if name == "" {
		return msg
	}
	return strings.ReplaceAll(strings.ReplaceAll(msg, fmt.Sprintf("executor %q ", name), "executor "), fmt.Sprintf("%q", name), "an executor")
}
