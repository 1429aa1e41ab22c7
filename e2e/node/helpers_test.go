package node

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// createNamespace makes a namespace for t with a unique name and labels,
// deleted when t ends.
func createNamespace(ctx context.Context, t testing.TB, prefix string, labels map[string]string) string {
	t.Helper()
	ns, err := cp.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// waitPodPhase waits for the pod to reach phase, failing at once if it
// reaches another terminal phase.
func waitPodPhase(ctx context.Context, t *testing.T, ns, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		if p.Status.Phase == phase {
			return true, nil
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod %s/%s is %s", ns, name, p.Status.Phase)
		}
		// No registry: an image that was not imported never comes.
		for _, c := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := c.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "ErrImageNeverPull") {
				return false, fmt.Errorf("container %s: %s: %s", c.Name, w.Reason, w.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never %s: %v\nstatus: %+v\nkubelet:\n%s", ns, name, phase, err, podStatus(pod), nd.LogTail("kubelet", 20))
	}
	return pod
}

func podStatus(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

// podLogs is `kubectl logs`: the API server asks the kubelet.
func podLogs(ctx context.Context, t *testing.T, ns, name, container string) string {
	t.Helper()
	data, err := cp.Client().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s/%s %s: %v", ns, name, container, err)
	}
	return string(data)
}

// waitLog waits until the container's log, read through the kubelet,
// holds want, failing at once if the pod ends without it.
func waitLog(ctx context.Context, t *testing.T, ns, name, container, want string) {
	t.Helper()
	var last []byte
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		data, err := cp.Client().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		last = data
		if strings.Contains(string(data), want) {
			return true, nil
		}
		if p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			return false, fmt.Errorf("the pod is %s", p.Status.Phase)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the log of %s/%s %s never showed %q: %v\n%s", ns, name, container, want, err, tail(string(last), 40))
	}
}

// sparkletImage is the reference make image tags sparklet's image with.
func sparkletImage(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("sed", "-n", `s/^appVersion: *"*\([^"]*\)"*$/\1/p`, "../../charts/sparklet/Chart.yaml").Output()
	if err != nil {
		t.Fatal(err)
	}
	return "ghcr.io/sparklet/sparklet:" + strings.TrimSpace(string(out))
}
