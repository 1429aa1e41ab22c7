package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// TestInPlaceResize asks this node's kubelet to resize a running
// container's memory in place, through the pods/resize subresource as
// Spark's ExecutorResizePlugin does (a strategic-merge patch of the
// container's memory request and limit), and checks that the kubelet
// applies it: the container's status and its memory cgroup show the new
// limit, and the container was not restarted. Where the kubelet defers
// or refuses the resize, the test fails with the pod's resize condition,
// which is what the executor resize meets on such a node.
func TestInPlaceResize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := createNamespace(ctx, t, "resize", nil)
	mem := resource.MustParse("64Mi")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "resize-me", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "sleep", Image: "apache/spark:4.3.0", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "600"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: mem, corev1.ResourceCPU: resource.MustParse("50m")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
				},
			}},
		},
	}
	if _, err := cp.Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPodPhase(ctx, t, ns, pod.Name, corev1.PodRunning)
	before, err := nd.Inspect(running, "sleep")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before: memory cgroup limit %d", before.MemoryLimit)

	want := resource.MustParse("80Mi")
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"sleep","resources":{"requests":{"memory":%q},"limits":{"memory":%q}}}]}}`,
		want.String(), want.String())
	if _, err := cp.Client().CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("the API server refused the resize: %v", err)
	}
	var last *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible {
				return true, nil
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Resources != nil && cs.Resources.Limits.Memory().Cmp(want) == 0 && resizeSettled(p) {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("conditions: %s; container status resources: %s", resizeConditions(last), statusResources(last))
	if err != nil {
		t.Fatalf("the kubelet neither applied nor refused the resize within 60 s: %v", err)
	}
	for _, c := range last.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			t.Fatalf("this node cannot resize in place: %s %s: %s", c.Type, c.Reason, c.Message)
		}
	}
	after, err := nd.Inspect(last, "sleep")
	if err != nil {
		t.Fatal(err)
	}
	if after.MemoryLimit != want.Value() {
		t.Errorf("memory cgroup limit %d after the resize, want %d", after.MemoryLimit, want.Value())
	}
	if rc := last.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("the container restarted %d times, want an in-place resize", rc)
	}
}

// resizeSettled reports whether the pod has no resize condition left.
func resizeSettled(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return false
		}
	}
	return true
}

func resizeConditions(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	out := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			out += fmt.Sprintf("[%s %s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if out == "" {
		return "none"
	}
	return out
}

func statusResources(p *corev1.Pod) string {
	if p == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
		return "none"
	}
	r := p.Status.ContainerStatuses[0].Resources
	return fmt.Sprintf("requests %v limits %v", r.Requests, r.Limits)
}
