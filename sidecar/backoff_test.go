package sidecar

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
)

// Every refusal by the API server, not only quota, is backed off: the
// JVM's retries within the period are answered from memory with the same
// status, and the refusal is one Event.
func TestEveryAPIRefusalIsBackedOff(t *testing.T) {
	cases := []struct {
		name, reason, mention string
		code                  int
		err                   error
	}{
		{"pod security", "ExecutorCreateFailed", "PodSecurity", http.StatusForbidden, apierrors.NewForbidden(podsGR, "x",
			fmt.Errorf(`violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`))},
		{"quota requiring limits", "ExecutorQuota", "must specify limits.memory", http.StatusForbidden, apierrors.NewForbidden(podsGR, "x",
			fmt.Errorf("exceeded quota: compute, must specify limits.memory for: spark-kubernetes-executor"))},
		{"bad policy field", "ExecutorCreateFailed", "spec.tolerations[0].operator", http.StatusUnprocessableEntity, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x",
			field.ErrorList{field.NotSupported(field.NewPath("spec", "tolerations").Index(0).Child("operator"), "Exist", []string{"Equal", "Exists"})})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startReacting(t, "create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			for i := 1; i <= 5; i++ { // the JVM retries every batch delay
				code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(i))
				if code != tc.code || !strings.Contains(string(body), tc.mention) {
					t.Fatalf("POST %d: %d %s; want %d and the API server's message", i, code, body, tc.code)
				}
			}
			if n := h.actions("create", "pods"); n != 1 {
				t.Errorf("%d creates reached the API server during one backoff period, want 1", n)
			}
			waitEvent(t, h.client, tc.reason, func(e corev1.Event) bool { return e.Count == 1 && e.Type == corev1.EventTypeWarning })
		})
	}
}

// The period doubles from backoffMin, and a create is let through once it ends.
func TestBackoffPeriodDoublesThenLetsThrough(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	h := startReacting(t, "create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(podsGR, "x", fmt.Errorf("exceeded quota: compute"))
		}
		return false, nil, nil
	})
	clock := time.Now()
	h.sc.api.alloc.mu.Lock()
	h.sc.api.alloc.now = func() time.Time { return clock }
	h.sc.api.alloc.mu.Unlock()
	post := func(id int) int {
		code, _ := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(id))
		return code
	}
	post(1) // refused: 2 s
	clock = clock.Add(backoffMin)
	post(2) // refused again: 4 s
	clock = clock.Add(backoffMin)
	post(3) // within the 4 s: from memory
	if n := h.actions("create", "pods"); n != 2 {
		t.Fatalf("%d creates reached the API server, want 2", n)
	}
	clock = clock.Add(backoffMin)
	refuse.Store(false)
	if code := post(4); code != http.StatusCreated {
		t.Fatalf("after the period: %d, want 201", code)
	}
	if code := post(5); code != http.StatusCreated {
		t.Errorf("after a success the backoff is reset, but the create got %d", code)
	}
}

// The executor limit is the sidecar's own refusal: every retry is
// answered afresh, and the Event is written once per backoff period.
func TestLimitRefusalsAreOneEvent(t *testing.T) {
	h := start(t, "limits: {maxExecutors: 1}\n")
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1)); code != http.StatusCreated {
		t.Fatalf("first executor: %d %s", code, body)
	}
	h.waitListed("spark-role%3Dexecutor", 1)
	for i := 2; i <= 6; i++ {
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(i)); code != http.StatusForbidden || !strings.Contains(string(body), "limits.maxExecutors=1") {
			t.Fatalf("executor %d: %d %s", i, code, body)
		}
	}
	h.sc.events.flush(5 * time.Second)
	waitEvent(t, h.client, "ExecutorLimit", func(e corev1.Event) bool { return e.Count == 1 })
}

// Refusals a backoff period kept from the Event are counted in it before
// the sidecar exits: Spark 4.x may give up within one period.
func TestUnreportedRefusalsAreCountedAtExit(t *testing.T) {
	h := start(t, "limits: {maxExecutors: 1}\n")
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1)); code != http.StatusCreated {
		t.Fatalf("first executor: %d %s", code, body)
	}
	h.waitListed("spark-role%3Dexecutor", 1)
	for i := 2; i <= 4; i++ {
		if code, _ := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(i)); code != http.StatusForbidden {
			t.Fatalf("executor %d: %d, want 403", i, code)
		}
	}
	h.sc.events.flush(5 * time.Second)
	waitEvent(t, h.client, "ExecutorLimit", func(e corev1.Event) bool { return e.Count == 1 })
	h.sc.api.alloc.reportUnreported()
	h.sc.events.flush(5 * time.Second)
	waitEvent(t, h.client, "ExecutorLimit", func(e corev1.Event) bool { return e.Count == 2 })
	h.sc.api.alloc.reportUnreported() // nothing left to report
	h.sc.events.flush(5 * time.Second)
	if ev := waitEvent(t, h.client, "ExecutorLimit", func(corev1.Event) bool { return true }); ev.Count != 2 {
		t.Errorf("count %d after a second report with nothing pending, want 2", ev.Count)
	}
}
