package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestHardenedContainer runs sparklet's own image on the real node as the
// chart runs it: non-root, read-only root filesystem, every capability
// dropped, a memory limit, in a namespace at Pod Security restricted; its
// log comes back through the API server from the kubelet.
func TestHardenedContainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := createNamespace(ctx, t, "hardened", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sparklet-version", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "sparklet",
				Image:           sparkletImage(t),
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{"version"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("100m"),
				}},
			}},
		},
	}
	created, err := cp.Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := waitPodPhase(ctx, t, ns, created.Name, corev1.PodSucceeded)
	if done.Spec.NodeName != "sparklet-node" {
		t.Errorf("pod ran on %q, want the real node", done.Spec.NodeName)
	}
	if !strings.HasPrefix(done.Status.PodIP, "10.215.0.") {
		t.Errorf("pod IP %q, want one of the node's bridge", done.Status.PodIP)
	}
	logs := podLogs(ctx, t, ns, created.Name, "sparklet")
	if !strings.Contains(logs, "version:") {
		t.Errorf("kubectl logs: %q, want sparklet's version", logs)
	}
}
