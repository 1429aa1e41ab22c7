package queue

import (
	"context"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/schedulers"
)

// Kueue's webhook configuration sorts before sparklet's, so it sees the
// queue label sparklet writes on a driver only when the API server calls
// it again: with reinvocationPolicy IfNeeded the driver is gated; with
// Never (the default of Kueue's manifests and chart) it goes through
// ungated, and Kueue never counts it.
func TestKueueSeesTheQueueLabelSparkletAdds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "kueue-order"
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		t.Fatal(err)
	}
	if err := kueue.ManageNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := kueueDriver(t, "order")
	delete(pod.Labels, schedulers.KueueQueueLabel)
	// admitted is the driver as the admission chain leaves it (a dry run).
	admitted := func(ctx context.Context) (*corev1.Pod, error) {
		return env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	labelled := func(p *corev1.Pod) bool { return p.Labels[schedulers.KueueQueueLabel] == localQueue }

	got, err := admitted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !labelled(got) || !schedulers.KueueGated(got) || got.Labels[schedulers.KueueManagedLabel] != "true" {
		t.Fatalf("with IfNeeded: labels %v, gates %v; want sparklet's queue label and Kueue's gate", got.Labels, got.Spec.SchedulingGates)
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
	// The API server picks the change up asynchronously.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := admitted(ctx)
		return err == nil && labelled(got) && !schedulers.KueueGated(got), nil
	})
	if err != nil {
		t.Fatalf("with Never the driver should go through ungated: %v", err)
	}

	if err := kueue.SetPodWebhookReinvocation(ctx, admissionv1.IfNeededReinvocationPolicy); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := admitted(ctx)
		return err == nil && labelled(got) && schedulers.KueueGated(got), nil
	})
	if err != nil {
		t.Fatalf("back to IfNeeded the driver should be gated again: %v", err)
	}
}
