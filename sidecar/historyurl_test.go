package sidecar

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

const historyPolicy = `history:
  s3: {endpoint: "http://127.0.0.1:9", bucket: logs, secretName: history-s3}
  url: https://history.example.com/
`

// waitHistoryURL waits for the driver pod's sparklet.io/history-url.
func (h *harness) waitHistoryURL(want string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pod, err := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi", metav1.GetOptions{})
		if err == nil && pod.Annotations[vocab.AnnotationHistoryURL] == want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s = %q after 10 s, want %q (%v)", vocab.AnnotationHistoryURL, pod.Annotations[vocab.AnnotationHistoryURL], want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHistoryURL: a sidecar that ships the event log to a store whose
// policy names a history server records the application's page there on
// the driver pod and in an Event; an app-per-JVM driver's, each JVM's.
func TestHistoryURL(t *testing.T) {
	sc := newTestSidecar(t, historyPolicy)
	sc.cfg.EventLogDir = t.TempDir()
	h := startSidecar(t, sc, driver())
	h.waitHistoryURL("https://history.example.com/history/" + testApp + "/jobs/")
	sc.events.flush(5 * time.Second)
	events := eventsWithReason(t, h.client, "HistoryURL")
	if len(events) != 1 || events[0].Type != corev1.EventTypeNormal || !strings.Contains(events[0].Message, "https://history.example.com/history/"+testApp+"/jobs/") {
		t.Errorf("HistoryURL events %+v, want one naming the page", events)
	}

	perJVM := newTestSidecar(t, historyPolicy)
	perJVM.cfg.EventLogDir = t.TempDir()
	perJVM.cfg.AppPerJVM = true
	drv := driver()
	drv.Spec.RestartPolicy = corev1.RestartPolicyAlways
	h = startSidecar(t, perJVM, drv)
	const jvm = "spark-0a1b"
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", jvmExecutor(jvm, 1)); code != 201 {
		t.Fatalf("first executor: %d %s", code, body)
	}
	h.waitHistoryURL("https://history.example.com/history/" + jvm + "/jobs/")
}

// TestHistoryURLOnlyWhenShipping: without an event log to ship, or
// without history.url, there is no page to record.
func TestHistoryURLOnlyWhenShipping(t *testing.T) {
	with := newTestSidecar(t, historyPolicy)
	with.cfg.EventLogDir = t.TempDir()
	if pol, err := with.effectivePolicy(); err != nil || with.historyPages(pol) == nil {
		t.Fatalf("with an event log dir and history.url: no history pages (%v); the cases below could not fail", err)
	}
	for name, tc := range map[string]struct {
		policy string
		dir    bool
	}{
		"no event log dir": {historyPolicy, false},
		"no url":           {strings.Replace(historyPolicy, "  url: https://history.example.com/\n", "", 1), true},
	} {
		sc := newTestSidecar(t, tc.policy)
		if tc.dir {
			sc.cfg.EventLogDir = t.TempDir()
		}
		pol, err := sc.effectivePolicy()
		if err != nil {
			t.Fatal(err)
		}
		if h := sc.historyPages(pol); h != nil {
			t.Errorf("%s: the sidecar would record history URLs: %+v", name, h)
		}
	}
}
