package sidecar

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/vocab"
)

// A failed executor the JVM deletes is labelled and kept for the policy's
// window, then deleted; a running one is deleted at once.
func TestFailedExecutorKeptForItsLogs(t *testing.T) {
	failed := executor(1)
	failed.Namespace = testNS
	failed.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "spark-kubernetes-executor", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 52}}}}}
	running := executor(2)
	running.Namespace = testNS
	running.Status.Phase = corev1.PodRunning
	h := start(t, "logs: {keepFailedExecutorsSeconds: 1}\n", failed, running)
	h.waitListed("spark-role%3Dexecutor", 2)

	deletes := func(name string) int {
		n := 0
		for _, a := range h.client.Actions() {
			if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "pods" && d.GetName() == name {
				n++
			}
		}
		return n
	}
	asked := time.Now()
	for range 2 { // Spark asks again on each snapshot while it sees the pod
		if code, body := h.do("DELETE", "/api/v1/namespaces/spark/pods/pi-exec-1", "", nil); code != 200 {
			t.Fatalf("DELETE of the failed executor: %d %s", code, body)
		}
	}
	if n := deletes("pi-exec-1"); n != 0 {
		t.Errorf("the failed executor was deleted at once (%d deletes)", n)
	}
	kept, err := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi-exec-1", metav1.GetOptions{})
	if err != nil || kept.Labels[vocab.LabelKeptUntil] == "" {
		t.Fatalf("the failed executor is not labelled %s: %v %v", vocab.LabelKeptUntil, err, kept.GetLabels())
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return deletes("pi-exec-1") == 1, nil
	})
	if err != nil {
		t.Fatalf("the kept executor was never deleted: %d deletes", deletes("pi-exec-1"))
	}
	if took := time.Since(asked); took < time.Second {
		t.Errorf("the kept executor was deleted after %v, before its 1 s window", took)
	}
	if code, body := h.do("DELETE", "/api/v1/namespaces/spark/pods/pi-exec-2", "", nil); code != 200 || deletes("pi-exec-2") != 1 {
		t.Errorf("DELETE of the running executor: %d %s, %d deletes; want it deleted at once", code, body, deletes("pi-exec-2"))
	}
}

// The end-of-application cleanup leaves kept executors to the driver pod.
func TestCleanupLeavesKeptExecutors(t *testing.T) {
	h := start(t, "")
	if err := h.sc.cleanupAndReport("test"); err != nil {
		t.Fatal(err)
	}
	sels := h.collectionDeletes("pods")
	if len(sels) == 0 {
		t.Fatal("cleanup deleted no executor pods")
	}
	for _, sel := range sels {
		if !strings.Contains(sel, "!"+vocab.LabelKeptUntil) {
			t.Errorf("cleanup deletes executors with %q, which does not leave the kept ones", sel)
		}
	}
}
