package cluster

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/e2egate"
)

// TestCluster starts the real control plane. It runs with SPARKLET_E2E=1
// (make test sets it) and fails if the binaries are missing.
func TestCluster(t *testing.T) {
	bin := e2egate.BinDir(t, "to start the control plane")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c := StartForTest(ctx, t, bin)
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kwok"} {
				t.Logf("%s log:\n%s", comp, c.LogTail(comp, 20))
			}
		}
	}()

	t.Run("kubectl sees a real server version", func(t *testing.T) {
		out, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig(), "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(string(out), "Server Version: v1.") {
			t.Errorf("kubectl version:\n%s", out)
		}
	})

	cs := c.Client()
	t.Run("pods run on kwok nodes", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" &&
				strings.HasPrefix(p.Spec.NodeName, "kwok-node-"), nil
		})
		if err != nil {
			t.Fatalf("pod did not run on a kwok node with an IP: %v", err)
		}
	})

	t.Run("root CA is published", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("garbage collector deletes owned pods", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods("default").Get(ctx, "owned", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("owned pod not garbage-collected: %v", err)
		}
	})
}
