package sidecar

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/vocab"
)

// endDriver ends the harness's Spark container with code, the driver pod
// carrying annotations, and waits for the sidecar to exit.
func (h *harness) endDriver(code int32, annotations map[string]string) {
	h.t.Helper()
	ctx := context.Background()
	d, err := h.client.CoreV1().Pods(testNS).Get(ctx, "pi", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(annotations) > 0 {
		d.Annotations = annotations
		if d, err = h.client.CoreV1().Pods(testNS).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	d.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}
	if _, err := h.client.CoreV1().Pods(testNS).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.waitExit("the Spark container ended")
}

// waitExit waits for the sidecar to exit 0 after what happened.
func (h *harness) waitExit(after string) {
	h.t.Helper()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("sidecar: %v", err)
		}
		h.done <- nil // for the cleanup hook
	case <-time.After(10 * time.Second):
		h.t.Fatalf("sidecar did not exit after %s", after)
	}
}

// The class is in an Event, the annotation and the condition on the
// driver pod, which a Job's podFailurePolicy matches by type and status.
func TestEndIsRecordedOnTheDriverPod(t *testing.T) {
	for _, c := range []struct {
		name        string
		code        int32
		annotations map[string]string
		executor    *corev1.Pod // failed before the driver ended
		class       string
		message     string
		eventType   string
	}{
		{"succeeded", 0, nil, nil, vocab.EndSucceeded, "the Spark container exited 0", corev1.EventTypeNormal},
		{"user error", 1, map[string]string{vocab.AnnotationExitException: "java.lang.IllegalStateException: boom\n\tat Main.main"}, nil,
			vocab.EndUserError, "the application failed (exit code 1): java.lang.IllegalStateException: boom", corev1.EventTypeWarning},
		{"executors lost to OOM", 1, nil, failedExecutor(1, terminatedWith(137, "OOMKilled")), vocab.EndExecutorsOOMKilled,
			"the application failed (exit code 1); 1 executor(s) were lost to OOM (pi-exec-1 OOMKilled)", corev1.EventTypeWarning},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := start(t, "", executorIn(1, corev1.PodRunning))
			if c.executor != nil {
				if _, err := h.client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), c.executor, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				waitEvent(t, h.client, "ExecutorsFailed", func(corev1.Event) bool { return true })
			}
			h.endDriver(c.code, c.annotations)
			d, err := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Annotations[vocab.AnnotationEnded]; !strings.HasPrefix(got, c.class+": "+c.message) {
				t.Errorf("%s = %q, want %q...", vocab.AnnotationEnded, got, c.class+": "+c.message)
			}
			var cond *corev1.PodCondition
			for i, pc := range d.Status.Conditions {
				if pc.Type == corev1.PodConditionType(vocab.ConditionPrefix+c.class) {
					cond = &d.Status.Conditions[i]
				}
			}
			if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != c.class || !strings.HasPrefix(cond.Message, c.message) {
				t.Errorf("condition %s: %+v, want True, reason %s, message %q...", vocab.ConditionPrefix+c.class, cond, c.class, c.message)
			}
			if len(d.Status.ContainerStatuses) != 1 || d.Status.ContainerStatuses[0].State.Terminated == nil {
				t.Errorf("the status patch lost the container statuses: %+v", d.Status.ContainerStatuses)
			}
			ev := waitEvent(t, h.client, c.class, func(corev1.Event) bool { return true })
			if ev.Type != c.eventType || !strings.HasPrefix(ev.Message, c.message) {
				t.Errorf("Event %s: %s %q, want %s %q...", c.class, ev.Type, ev.Message, c.eventType, c.message)
			}
		})
	}
}

// A ServiceAccount without patch on pods/status (a chart older than the
// condition) costs the condition alone: the sidecar says so in a Warning
// Event and still cleans up and exits 0.
func TestEndWithoutRBACForTheConditionStillCleansUp(t *testing.T) {
	h := startReacting(t, "patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/status"}, "pi",
			errors.New(`User "system:serviceaccount:spark:spark-driver" cannot patch resource "pods/status"`))
	})
	h.endDriver(1, nil)
	ev := waitEvent(t, h.client, "EndNotRecorded", func(corev1.Event) bool { return true })
	if !strings.Contains(ev.Message, "sparklet.io/UserError") || !strings.Contains(ev.Message, "pods/status") {
		t.Errorf("EndNotRecorded: %q", ev.Message)
	}
	d, _ := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi", metav1.GetOptions{})
	if !strings.HasPrefix(d.Annotations[vocab.AnnotationEnded], vocab.EndUserError+": ") {
		t.Errorf("annotation %q", d.Annotations[vocab.AnnotationEnded])
	}
	if h.actions("delete-collection", "pods") != 1 {
		t.Error("no cleanup")
	}
}

// A sidecar stopped after its pod was replaced by a new one of the same
// name (deleted and applied again) says how its application ended in an
// Event, and writes nothing on the new pod.
func TestEndNeverWritesANewPodOfTheSameName(t *testing.T) {
	h := start(t, "")
	ctx := context.Background()
	if err := h.client.CoreV1().Pods(testNS).Delete(ctx, "pi", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next := driver()
	next.UID = "new-uid"
	if _, err := h.client.CoreV1().Pods(testNS).Create(ctx, next, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.cancel()
	h.waitExit("it was stopped")
	ev := waitEvent(t, h.client, vocab.EndDriverKilled, func(corev1.Event) bool { return true })
	if !strings.Contains(ev.Message, "still running") {
		t.Errorf("Event %s: %q", vocab.EndDriverKilled, ev.Message)
	}
	if n := h.patchesOfPods(); n != 0 {
		t.Errorf("%d patches of pods after the driver pod was replaced, want none", n)
	}
}

// patchesOfPods counts the patches of pods and their subresources.
func (h *harness) patchesOfPods() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// A sidecar stopped while the Spark container runs, on a pod that is not
// being deleted, is restarted by the kubelet: it says so in an Event and
// writes no end on the pod. A sidecar that finds the end written by an
// earlier run of its own writes nothing again.
func TestEndIsWrittenOnlyAtTheEndAndOnce(t *testing.T) {
	h := start(t, "")
	h.cancel()
	h.waitExit("it was stopped")
	waitEvent(t, h.client, vocab.EndDriverKilled, func(corev1.Event) bool { return true })
	if n := h.patchesOfPods(); n != 0 {
		t.Errorf("%d patches of the running driver pod, want none", n)
	}

	d := driver()
	d.Annotations = map[string]string{vocab.AnnotationEnded: vocab.EndExecutorsOOMKilled + ": the first sidecar saw the executors"}
	h = startWith(t, "", d)
	h.endDriver(1, nil)
	h.sc.events.flush(5 * time.Second)
	if n := h.patchesOfPods(); n != 0 {
		t.Errorf("%d patches of a driver pod whose end was recorded, want none", n)
	}
	if evs := eventsWithReason(t, h.client, vocab.EndUserError); len(evs) != 0 {
		t.Errorf("a second end was reported: %+v", evs)
	}
}
