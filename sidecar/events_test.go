package sidecar

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

func eventsWithReason(t *testing.T, client *fake.Clientset, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// A JVM retries a refused executor every second, each time under a new
// name: the refusals fold into one Event, written once per period.
func TestRefusalsFoldIntoOneEvent(t *testing.T) {
	h := start(t, "")
	for i := 1; i <= 10; i++ {
		other := executor(i)
		other.Labels["spark-app-selector"] = "someone-else"
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", other); code != 403 {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
	}
	evs := eventsWithReason(t, h.client, "ExecutorRefused")
	if len(evs) != 1 {
		t.Fatalf("%d ExecutorRefused events, want 1", len(evs))
	}
	if n := h.actions("create", "events") - len(eventsWithReason(t, h.client, "SidecarReady")); n != 1 {
		t.Errorf("%d Event creates for refusals, want 1", n)
	}
	if n := h.actions("patch", "events"); n != 0 {
		t.Errorf("%d Event patches within one period, want 0", n)
	}
	if !strings.Contains(evs[0].Message, "someone-else") {
		t.Errorf("message %q does not say why", evs[0].Message)
	}
}

func TestRepeatsUpdateCountAndMessage(t *testing.T) {
	client := fake.NewClientset()
	log := logrus.New()
	log.SetOutput(io.Discard)
	r := &recorder{client: client, driver: driver(), log: log.WithField("component", "test"), updateEvery: 50 * time.Millisecond}
	for i := 1; i <= 20; i++ {
		r.warning("ExecutorRefused", fmt.Sprintf("refusal %d", i))
	}
	r.normal("SidecarReady", "ready")
	var last corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		evs := eventsWithReason(t, client, "ExecutorRefused")
		if len(evs) != 1 {
			return false, fmt.Errorf("%d ExecutorRefused events, want 1", len(evs))
		}
		last = evs[0]
		return last.Count == 20, nil
	})
	if err != nil {
		t.Fatalf("%v; last event %+v", err, last)
	}
	if last.Message != "refusal 20" || last.Type != corev1.EventTypeWarning || !last.LastTimestamp.After(last.FirstTimestamp.Time) && !last.LastTimestamp.Equal(&last.FirstTimestamp) {
		t.Errorf("event %+v", last)
	}
	if n := len(eventsWithReason(t, client, "SidecarReady")); n != 1 {
		t.Errorf("%d SidecarReady events, want 1: another reason is another Event", n)
	}
	patches := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
		}
	}
	if patches > 2 {
		t.Errorf("%d patches for 19 repeats within a few periods, want at most 2", patches)
	}
}
