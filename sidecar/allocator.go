package sidecar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// allocator creates the executor pods the JVM asks for, under the executor
// policy, with bounded concurrency and rate.
type allocator struct {
	client kubecore.Interface
	state  *state
	// driver is the driver pod's facts as the sidecar checked them at
	// start; later edits of the pod are not followed (admitted.go).
	driver    *patches.DriverFacts
	policy    *policy.Effective
	apps      *apps
	namespace string
	events    *recorder
	metrics   *metrics
	log       *logrus.Entry
	limiter   flowcontrol.RateLimiter
	slots     chan struct{}
	now       func() time.Time

	mu      sync.Mutex
	blocked time.Time // the end of the backoff after a failed create
	backoff time.Duration
	apiErr  error // the API server's refusal, repeated to the JVM until blocked
	// apiReason is apiErr's Event reason.
	apiReason string
	inflight  int
	// unreported holds, by Event reason, the last failure within a backoff
	// period, which no Event reported yet.
	unreported map[string]string
	// refused counts the refused creations by Event reason, for how the
	// application ended.
	refused map[string]refusals

	createdTotal int       // executors created by this sidecar
	sinceEvent   int       // created since the last ExecutorsCreated event
	lastEvent    time.Time // when that event was written
}

// newAllocator returns an allocator that creates at most
// sidecar.createConcurrency executors at once and sidecar.createQPS a
// second, as the policy (with its defaults filled in) says.
func newAllocator(client kubecore.Interface, st *state, driver *patches.DriverFacts, pol *policy.Effective, namespace string, apps *apps,
	ev *recorder, m *metrics, log *logrus.Entry) *allocator {
	conc := pol.Sidecar.CreateConcurrency
	return &allocator{
		client: client, state: st, driver: driver, policy: pol, apps: apps, namespace: namespace, events: ev, metrics: m, log: log,
		limiter: flowcontrol.NewTokenBucketRateLimiter(float32(pol.Sidecar.CreateQPS), conc),
		slots:   make(chan struct{}, conc),
		now:     time.Now,
	}
}

// created is the allocator's answer to one executor POST.
type created struct {
	pod *corev1.Pod
	// isNew is false when the pod existed already.
	isNew bool
	// warnings are what the JVM is answered with in Warning headers.
	warnings []string
}

// create handles one executor POST from the JVM; its errors are
// apierrors statuses. The warnings of patches.Executor are Warning Events
// on the driver pod and come back in the answer.
func (a *allocator) create(ctx context.Context, pod *corev1.Pod) (created, error) {
	if pod.Namespace != "" && pod.Namespace != a.namespace {
		return created{}, apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("executors must be created in %s, the driver's namespace", a.namespace))
	}
	pod.Namespace = a.namespace
	// fabric8 retries a POST after a 5xx, so the pod may exist already.
	if existing, err := a.state.executor(pod.Name); err == nil {
		out, err := existing.decode()
		if err != nil {
			return created{}, apierrors.NewInternalError(err)
		}
		return created{pod: out}, nil
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	app, err := a.apps.use(ctx, pod.Labels[vocab.LabelAppID])
	if err != nil {
		return created{}, err
	}
	res, err := patches.Executor(pod, patches.ExecutorInput{Policy: a.policy, Driver: a.driver, AppID: app})
	if err != nil {
		return created{}, a.refuse(pod.Name, err)
	}
	a.apps.stamp(&pod.ObjectMeta)
	var warnings []string
	for _, w := range res.Warnings {
		a.events.warning(w.Reason, w.Message)
		warnings = append(warnings, w.Message)
	}
	if err := a.reserve(pod.Name); err != nil {
		return created{}, a.failed(pod.Name, "ExecutorLimit", "executors refused: the executor limit is reached", err, false)
	}
	defer a.release()
	if err := a.checkBackoff(pod.Name); err != nil {
		return created{}, err
	}
	out, isNew, err := a.createLimited(ctx, pod)
	return created{pod: out, isNew: isNew, warnings: warnings}, err
}

// createLimited creates the pod on the API server once a creation slot
// and the rate limiter allow it.
func (a *allocator) createLimited(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, bool, error) {
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, apierrors.NewTimeoutError("waiting to create the executor", 1)
	}
	defer func() { <-a.slots }()
	if err := a.limiter.Wait(ctx); err != nil {
		return nil, false, apierrors.NewTimeoutError("waiting to create the executor", 1)
	}
	start := a.now()
	out, err := a.client.Pods(a.namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager})
	a.metrics.createLatency.Observe(time.Since(start).Seconds())
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, gerr := a.client.Pods(a.namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && a.apps.owns(existing.Labels) {
			return existing, false, nil
		}
		return nil, false, err
	case isQuota(err):
		return nil, false, a.failed(pod.Name, "ExecutorQuota", "executors refused by a ResourceQuota", err, true)
	case err != nil:
		return nil, false, a.failed(pod.Name, "ExecutorCreateFailed", "the API server refused an executor", err, true)
	}
	a.clearBackoff()
	a.recordCreated(out.Name)
	return out, true, nil
}

// reserve enforces limits.maxExecutors, counting creations in flight.
func (a *allocator) reserve(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	max := a.policy.Limits.MaxExecutors
	if max > 0 && a.state.activeExecutors()+a.inflight >= max {
		err := fmt.Errorf("this application already has %d executors, the policy limit limits.maxExecutors=%d", max, max)
		return apierrors.NewForbidden(podsGR, name, err)
	}
	a.inflight++
	return nil
}

func (a *allocator) release() {
	a.mu.Lock()
	a.inflight--
	a.mu.Unlock()
}

func (a *allocator) refuse(name string, err error) error {
	var r *patches.Refused
	if errors.As(err, &r) {
		a.log.WithFields(logrus.Fields{"pod": name, "reason": r.Reason}).Debug("executor refused: " + r.Message)
		return a.failed(name, "ExecutorRefused", "executors refused by the sparklet policy",
			apierrors.NewForbidden(podsGR, name, fmt.Errorf("sparklet policy: %s", r.Message)), false)
	}
	return a.failed(name, "ExecutorRefused", "executors refused", apierrors.NewBadRequest(err.Error()), false)
}

// createdEventEvery spaces the ExecutorsCreated events: one per executor
// would put a write on the API server per executor.
const createdEventEvery = 30 * time.Second

// recordCreated counts a creation and, at most every createdEventEvery,
// summarises the creations in an Event on the driver pod.
func (a *allocator) recordCreated(name string) {
	a.mu.Lock()
	a.createdTotal++
	a.sinceEvent++
	now := a.now()
	if !a.lastEvent.IsZero() && now.Sub(a.lastEvent) < createdEventEvery {
		a.mu.Unlock()
		return
	}
	msg := fmt.Sprintf("created executor pod %s; %d created since the last such event, %d in all", name, a.sinceEvent, a.createdTotal)
	a.sinceEvent, a.lastEvent = 0, now
	a.mu.Unlock()
	a.events.normal("ExecutorsCreated", msg)
}
