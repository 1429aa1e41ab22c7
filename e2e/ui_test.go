package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/vocab"
)

// TestSparkUIServiceLivesWithTheDriver: a driver that asks for its UI gets
// a Service from its sidecar, owned by the pod and selecting it, its URL
// on the pod and in an Event; the garbage collector (kube-controller-
// manager) removes the Service with the pod.
func TestSparkUIServiceLivesWithTheDriver(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	pod := examplePod(t, "spark-pi-pod.yaml")
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[vocab.AnnotationUI] = "true"
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireInjected(t, pod)
	env.StartSidecar(ctx, t, pod)

	name := pod.Name + "-ui"
	url := "http://" + name + "." + ns + ".svc:4040"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Annotations[vocab.AnnotationUIURL] != "", nil
	})
	if err != nil {
		t.Fatalf("no %s annotation on the driver: %v", vocab.AnnotationUIURL, err)
	}
	p, _ := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if got := p.Annotations[vocab.AnnotationUIURL]; got != url {
		t.Errorf("%s = %q, want %q", vocab.AnnotationUIURL, got, url)
	}
	svc, err := env.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if own := svc.OwnerReferences; len(own) != 1 || own[0].UID != pod.UID {
		t.Errorf("Service owners %+v, want the driver pod %s", own, pod.UID)
	}
	if svc.Spec.Ports[0].Port != 4040 || svc.Spec.Selector[vocab.LabelAppID] != pod.Labels[vocab.LabelAppID] {
		t.Errorf("Service spec %+v", svc.Spec)
	}
	// The sidecar writes Events from its own queue, so wait for it.
	var events *corev1.EventList
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err = env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=SparkUI"})
		return err == nil && len(events.Items) > 0, nil
	})
	if err != nil || len(events.Items) != 1 || !strings.Contains(events.Items[0].Message, url) {
		t.Errorf("SparkUI events %+v (%v), want one with %s", events, err, url)
	}

	zero := int64(0)
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the UI Service outlived its driver pod: %v", err)
	}
	t.Logf("UI Service garbage-collected %s after the driver pod's deletion", time.Since(deleted).Round(time.Millisecond))
}
