package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// Backoff after the API server refuses an executor for quota: the JVM's
// allocator retries every second (spark.kubernetes.allocation.batch.delay)
// with no backoff of its own, so the sidecar answers those retries itself.
const (
	quotaBackoffMin = 2 * time.Second
	quotaBackoffMax = time.Minute
)

// allocator creates the executor pods the JVM asks for, under the executor
// policy, with bounded concurrency and rate.
type allocator struct {
	client    kubernetes.Interface
	state     *state
	policy    *policy.Effective
	appID     string
	namespace string
	events    *recorder
	metrics   *metrics
	log       *logrus.Entry
	limiter   flowcontrol.RateLimiter
	slots     chan struct{}
	now       func() time.Time

	mu        sync.Mutex
	blocked   time.Time // quota: answer from memory until then
	backoff   time.Duration
	lastQuota error
	inflight  int

	createdTotal int       // executors created by this sidecar
	sinceEvent   int       // created since the last ExecutorsCreated event
	lastEvent    time.Time // when that event was written
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

func newAllocator(client kubernetes.Interface, st *state, pol *policy.Effective, appID string, ev *recorder, m *metrics, log *logrus.Entry) *allocator {
	qps, conc := pol.Sidecar.CreateQPS, pol.Sidecar.CreateConcurrency
	if qps <= 0 {
		qps = policy.DefaultCreateQPS
	}
	if conc <= 0 {
		conc = policy.DefaultCreateConcurrency
	}
	return &allocator{
		client: client, state: st, policy: pol, appID: appID, namespace: st.namespace, events: ev, metrics: m, log: log,
		limiter: flowcontrol.NewTokenBucketRateLimiter(float32(qps), conc),
		slots:   make(chan struct{}, conc),
		now:     time.Now,
	}
}

// create handles one executor POST from the JVM. It returns the pod and
// the HTTP status to answer with.
func (a *allocator) create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, int, error) {
	if pod.Namespace != "" && pod.Namespace != a.namespace {
		return nil, 0, apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("executors must be created in %s, the driver's namespace", a.namespace))
	}
	pod.Namespace = a.namespace
	// fabric8 retries a POST after a 5xx, so the pod may exist already.
	if existing, err := a.state.executor(pod.Name); err == nil {
		return existing, http.StatusOK, nil
	}
	if err := a.checkQuotaBackoff(pod.Name); err != nil {
		return nil, 0, err
	}
	driver, ok := a.state.driverPod()
	if !ok {
		return nil, 0, apierrors.NewServiceUnavailable("the sidecar has not seen its driver pod yet")
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if err := patches.Executor(pod, patches.ExecutorInput{Policy: a.policy, Driver: driver, AppID: a.appID}); err != nil {
		return nil, 0, a.refuse(pod.Name, err)
	}
	if err := a.reserve(pod.Name); err != nil {
		return nil, 0, err
	}
	defer a.release()

	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, apierrors.NewTimeoutError("waiting to create the executor", 1)
	}
	defer func() { <-a.slots }()
	if err := a.limiter.Wait(ctx); err != nil {
		return nil, 0, apierrors.NewTimeoutError("waiting to create the executor", 1)
	}
	start := a.now()
	created, err := a.client.CoreV1().Pods(a.namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldM})
	a.metrics.createLatency.Observe(time.Since(start).Seconds())
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, gerr := a.client.CoreV1().Pods(a.namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && existing.Labels[patches.LabelAppID] == a.appID {
			return existing, http.StatusOK, nil
		}
		return nil, 0, err
	case isQuota(err):
		return nil, 0, a.quotaRefused(pod.Name, err)
	case err != nil:
		return nil, 0, err
	}
	a.clearBackoff()
	a.recordCreated(created.Name)
	return created, http.StatusCreated, nil
}

// reserve enforces limits.maxExecutors, counting creations in flight.
func (a *allocator) reserve(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	max := a.policy.Limits.MaxExecutors
	if max > 0 && a.state.activeExecutors()+a.inflight >= max {
		err := fmt.Errorf("this application already has %d executors, the policy limit limits.maxExecutors=%d", max, max)
		a.events.warning("ExecutorLimit", err.Error())
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
		a.events.warning("ExecutorRefused", r.Message)
		a.log.WithFields(logrus.Fields{"pod": name, "reason": r.Reason}).Warn("executor refused: " + r.Message)
		return apierrors.NewForbidden(podsGR, name, fmt.Errorf("sparklet policy: %s", r.Message))
	}
	return apierrors.NewBadRequest(err.Error())
}

func isQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// checkQuotaBackoff answers from memory while a quota refusal is fresh.
func (a *allocator) checkQuotaBackoff(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.now().Before(a.blocked) {
		a.metrics.quotaShortCircuits.Inc()
		return apierrors.NewForbidden(podsGR, name, fmt.Errorf("%v (sparklet retries after %s)",
			a.lastQuota, a.blocked.Sub(a.now()).Round(time.Second)))
	}
	return nil
}

func (a *allocator) quotaRefused(name string, err error) error {
	a.mu.Lock()
	if a.backoff == 0 {
		a.backoff = quotaBackoffMin
	} else {
		a.backoff = min(2*a.backoff, quotaBackoffMax)
	}
	a.blocked = a.now().Add(a.backoff)
	a.lastQuota = err
	backoff := a.backoff
	a.mu.Unlock()
	// One event per backoff period: only a real API refusal gets here.
	a.events.warning("ExecutorQuota", fmt.Sprintf("executor %s refused by a ResourceQuota; retrying in %s: %v", name, backoff, err))
	a.log.WithField("pod", name).WithError(err).Warn("executor refused by quota")
	return err
}

func (a *allocator) clearBackoff() {
	a.mu.Lock()
	a.backoff, a.blocked = 0, time.Time{}
	a.mu.Unlock()
}
