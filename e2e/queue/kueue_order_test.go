package queue

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/schedulers"
)

// Kueue's webhook configuration sorts before sparklet's, so Kueue's webhook
// sees the queue label sparklet writes on a driver only when the API server
// calls it again (reinvocationPolicy IfNeeded): it then adds its finalizer.
// With Never, the default of Kueue's manifests and chart, it never sees
// the label; the gate and the managed label sparklet writes itself keep the
// driver waiting all the same, and Kueue admits it against its quota.
func TestKueueTakesDriversWithEitherReinvocationPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, cq = "kueue-order", "order-cq"
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		t.Fatal(err)
	}
	if err := kueue.ManageNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := kueue.CreateClusterQueue(ctx, cq, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}); err != nil {
		t.Fatal(err)
	}
	if err := kueue.CreateLocalQueue(ctx, ns, localQueue, cq); err != nil {
		t.Fatal(err)
	}
	pod := kueueDriver(t, "order")
	// admitted is the driver as the admission chain leaves it (a dry run).
	admitted := func(ctx context.Context) (*corev1.Pod, error) {
		return env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	waiting := func(p *corev1.Pod) bool {
		return p.Labels[schedulers.KueueQueueLabel] == localQueue && p.Labels[schedulers.KueueManagedLabel] == "true" && schedulers.KueueGated(p)
	}
	takenByKueue := func(p *corev1.Pod) bool { return slices.Contains(p.Finalizers, schedulers.KueueFinalizer) }

	got, err := admitted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !waiting(got) || !takenByKueue(got) {
		t.Fatalf("with IfNeeded: labels %v, gates %v, finalizers %v; want sparklet's queue label, the gate and Kueue's finalizer",
			got.Labels, got.Spec.SchedulingGates, got.Finalizers)
	}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := kueue.SetPodWebhookReinvocation(ctx, admissionv1.IfNeededReinvocationPolicy); err != nil {
			t.Error(err)
		}
	})
	if err := kueue.SetPodWebhookReinvocation(ctx, admissionv1.NeverReinvocationPolicy); err != nil {
		t.Fatal(err)
	}
	// The API server picks the change up asynchronously: Kueue's webhook
	// no longer takes the driver, sparklet's still gates it.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = admitted(ctx)
		return err == nil && !takenByKueue(got), nil
	})
	if err != nil {
		t.Fatalf("with Never Kueue's webhook still takes the driver: %v", err)
	}
	if !waiting(got) {
		t.Fatalf("with Never: labels %v, gates %v; want sparklet's queue label, managed label and gate", got.Labels, got.Spec.SchedulingGates)
	}
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !waiting(created) || takenByKueue(created) {
		t.Fatalf("with Never: labels %v, gates %v, finalizers %v", created.Labels, created.Spec.SchedulingGates, created.Finalizers)
	}
	var last *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("with Never the driver never ran (gates %v): %v\n%s", last.Spec.SchedulingGates, err, kueue.LogTail(20))
	}
	wls, err := kueue.Workloads(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(wls) != 1 || wls[0].Pod != created.Name || !wls[0].Admitted || wls[0].ClusterQueue != cq {
		t.Fatalf("with Never: Workloads %+v, want the driver's, admitted into %s", wls, cq)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := kueue.SetPodWebhookReinvocation(ctx, admissionv1.IfNeededReinvocationPolicy); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := admitted(ctx)
		return err == nil && takenByKueue(got), nil
	})
	if err != nil {
		t.Fatalf("back to IfNeeded, Kueue's webhook should take the driver again: %v", err)
	}
}
