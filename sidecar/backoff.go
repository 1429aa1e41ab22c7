package sidecar

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Backoff after an executor create fails, for any reason: Spark's
// allocator retries every spark.kubernetes.allocation.batch.delay (1 s)
// with no backoff of its own (ExecutorPodsAllocator.scala, v3.5 and v4.x),
// so the sidecar spaces what reaches the API server itself. The period
// starts at backoffMin, doubles with each failure after it ends, and is
// reset by a successful create.
const (
	backoffMin = 2 * time.Second
	backoffMax = time.Minute
)

func isQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// checkBackoff answers from memory, with the API server's last refusal,
// while a backoff after it runs.
func (a *allocator) checkBackoff(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.apiErr == nil || !a.now().Before(a.blocked) {
		return nil
	}
	a.metrics.quotaShortCircuits.Inc()
	r := a.refused[a.apiReason]
	r.count++
	a.refused[a.apiReason] = r
	msg := fmt.Sprintf("%s (sparklet retries after %s)", a.apiErr.Error(), a.blocked.Sub(a.now()).Round(time.Second))
	var st apierrors.APIStatus
	if errors.As(a.apiErr, &st) {
		s := st.Status()
		s.Message = msg
		return &apierrors.StatusError{ErrStatus: s}
	}
	return apierrors.NewForbidden(podsGR, name, errors.New(msg))
}

// failed records a failed create and returns err. The first failure after
// a backoff period starts the next, longer one and is reported as an Event
// (emitted after the lock is released); failures within the period are
// not. fromAPI marks a refusal by the API server, which checkBackoff then
// repeats to the JVM until the period ends; refusals by the sidecar itself
// (policy, limits) cost the API server nothing and are answered afresh.
func (a *allocator) failed(name, reason, what string, err error, fromAPI bool) error {
	a.mu.Lock()
	now := a.now()
	report := !now.Before(a.blocked)
	if report {
		if a.backoff == 0 {
			a.backoff = backoffMin
		} else {
			a.backoff = min(2*a.backoff, backoffMax)
		}
		a.blocked = now.Add(a.backoff)
	}
	if fromAPI {
		a.apiErr, a.apiReason = err, reason
	}
	if a.refused == nil {
		a.refused = map[string]refusals{}
	}
	a.refused[reason] = refusals{count: a.refused[reason].count + 1, last: eventMessage(err.Error(), name)}
	msg := fmt.Sprintf("%s (reported at most once per backoff period, up to %s): %s", what, backoffMax, eventMessage(err.Error(), name))
	if report {
		delete(a.unreported, reason)
	} else {
		if a.unreported == nil {
			a.unreported = map[string]string{}
		}
		a.unreported[reason] = msg
	}
	a.mu.Unlock()
	if report {
		a.events.warning(reason, msg)
		a.log.WithField("pod", name).WithError(err).Warn(what)
	}
	return err
}

// reportUnreported emits the failures a backoff period kept from an Event,
// one per reason, so that the Event's count shows them before the sidecar
// exits. Spark may give up within one period: 4.x counts each failed pod
// creation as an executor failure (ExecutorPodsAllocator.
// registerPodCreationFailure, 4.3.0) and stops after
// spark.executor.maxNumFailures.
func (a *allocator) reportUnreported() {
	a.mu.Lock()
	pending := a.unreported
	a.unreported = nil
	a.mu.Unlock()
	for _, reason := range slices.Sorted(maps.Keys(pending)) {
		a.events.warning(reason, pending[reason])
	}
}

// refusals are the creations refused so far: by a ResourceQuota, and by
// the policy, its limits or the API server's admission.
func (a *allocator) refusals() (quota, other refusals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, reason := range slices.Sorted(maps.Keys(a.refused)) {
		r := a.refused[reason]
		if reason == "ExecutorQuota" {
			quota = r
			continue
		}
		other.count += r.count
		other.last = r.last
	}
	return quota, other
}

func (a *allocator) clearBackoff() {
	a.mu.Lock()
	a.backoff, a.blocked, a.apiErr, a.apiReason = 0, time.Time{}, nil, ""
	a.mu.Unlock()
}
