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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
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

// waitEvent waits for the one Event with reason to satisfy ok.
func waitEvent(t *testing.T, client *fake.Clientset, reason string, ok func(corev1.Event) bool) corev1.Event {
	t.Helper()
	var last []corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		last = eventsWithReason(t, client, reason)
		return len(last) == 1 && ok(last[0]), nil
	})
	if err != nil {
		t.Fatalf("want one %s Event: %v; have %+v", reason, err, last)
	}
	return last[0]
}

func testRecorder(client *fake.Clientset) *recorder {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return newRecorder(kubecoretest.New(client), driver(), log.WithField("component", "test"))
}

// A JVM retries a refused executor every second, each time under a new
// name: within a backoff period the refusals cost no Event write, and the
// Event reads the same for every executor.
func TestRefusalsFoldIntoOneEvent(t *testing.T) {
	h := start(t, "")
	for i := 1; i <= 10; i++ {
		other := executor(i)
		other.Labels["spark-app-selector"] = "someone-else"
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", other); code != 403 || !strings.Contains(string(body), "someone-else") {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
	}
	ev := waitEvent(t, h.client, "ExecutorRefused", func(corev1.Event) bool { return true })
	h.sc.events.flush(5 * time.Second)
	if n := h.actions("create", "events") - len(eventsWithReason(t, h.client, "SidecarReady")); n != 1 {
		t.Errorf("%d Event creates for refusals, want 1", n)
	}
	if n := h.actions("patch", "events"); n != 0 {
		t.Errorf("%d Event patches within one backoff period, want 0", n)
	}
	if !strings.Contains(ev.Message, "someone-else") || strings.Contains(ev.Message, "pi-exec-1") {
		t.Errorf("message %q does not say why, or names one executor", ev.Message)
	}
}

// Repeats of one Event become its count, through client-go's correlator.
func TestRepeatsUpdateCount(t *testing.T) {
	client := fake.NewClientset()
	r := testRecorder(client)
	for i := 1; i <= 5; i++ {
		r.warning("ExecutorQuota", "executors refused by a ResourceQuota")
	}
	r.normal("SidecarReady", "ready")
	r.flush(5 * time.Second)
	ev := waitEvent(t, client, "ExecutorQuota", func(e corev1.Event) bool { return e.Count == 5 })
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID != "driver-uid" {
		t.Errorf("event %+v", ev)
	}
	if n := len(eventsWithReason(t, client, "SidecarReady")); n != 1 {
		t.Errorf("%d SidecarReady events, want 1: another reason is another Event", n)
	}
}

// emit never waits for the API server, so it may be called anywhere,
// under a lock or in the JVM's request.
func TestEmitDoesNotWaitForTheAPIServer(t *testing.T) {
	client := fake.NewClientset()
	release := make(chan struct{})
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	r := testRecorder(client)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 50; i++ {
			r.warning("ExecutorRefused", fmt.Sprint("refusal ", i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("emit blocked while the API server did not answer")
	}
	close(release)
	r.flush(5 * time.Second)
	if len(eventsWithReason(t, client, "ExecutorRefused")) == 0 {
		t.Error("no Event written once the API server answered")
	}
}

func TestEventMessageDropsTheExecutorName(t *testing.T) {
	got := eventMessage(`pods "pi-exec-7" is forbidden: sparklet policy: executor "pi-exec-7" mounts hostPath volume "x"`, "pi-exec-7")
	want := `pods an executor is forbidden: sparklet policy: executor mounts hostPath volume "x"`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
