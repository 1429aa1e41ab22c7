package sidecar

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Backoff after the API server refuses an executor for quota: the JVM's
// allocator retries every second (spark.kubernetes.allocation.batch.delay)
// with no backoff of its own, so the sidecar answers those retries itself.
const (
	quotaBackoffMin = 2 * time.Second
	quotaBackoffMax = time.Minute
)

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
