package realspark

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/vocab"
)

// TestSparkPi applies examples/spark-pi-pod.yaml, with the image of each
// pinned Spark version, as a user would: the webhook injects it, the
// runner starts the sidecar and then the stock driver, the driver asks the
// sidecar for two executors, they register and compute, and when the
// driver ends the sidecar removes everything the application made.
func TestSparkPi(t *testing.T) {
	e2egate.ProvenOnNode(t, "TestHelmInstall/SparkPi-<version>, for each pinned version")
	for _, d := range dists {
		t.Run(d.Version, func(t *testing.T) {
			ns := namespace(t)
			execs := trackExecutors(t, ns)
			start := time.Now()
			kubectl(t, example(t, "spark-pi-pod.yaml", d), "apply", "-n", ns, "-f", "-")

			running := waitPod(t, ns, "spark-pi", "ran its driver container", 3*time.Minute, containerRunning("spark"))
			driverUp := time.Now()
			appID := running.Labels[vocab.LabelAppID]
			if appID == "" {
				t.Fatalf("driver pod has no %s label", vocab.LabelAppID)
			}

			done := waitPod(t, ns, "spark-pi", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			finished := time.Now()
			driverLog := log(ns, "spark-pi", "spark")
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, "spark-pi"))
			}
			if pi := piValue(t, driverLog); math.Abs(pi-math.Pi) > 0.01 {
				t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
			}
			registered := strings.Count(driverLog, "Registered executor")
			if registered < 2 {
				t.Errorf("%d executors registered with the driver, want 2\n%s", registered, driverLogTail(ns, "spark-pi"))
			}
			pods := execs.Pods()
			if len(pods) != 2 {
				t.Errorf("%d executor pods, want exactly 2", len(pods))
			}
			for _, p := range pods {
				if p.Labels[enforcedLabel] != enforcedLabelValue {
					t.Errorf("executor %s lacks the policy's enforced label: %v", p.Name, p.Labels)
				}
				if p.Labels[vocab.LabelAppID] != appID {
					t.Errorf("executor %s has app id %q, want %q", p.Name, p.Labels[vocab.LabelAppID], appID)
				}
			}
			executorsUp, ok := execs.NthRunning(2)
			if !ok {
				t.Errorf("never saw 2 executors Running")
			}
			clean := waitClean(t, ns, appID, 30*time.Second)

			// The sidecar exited once the driver had, so the pod completed.
			for _, s := range done.Status.InitContainerStatuses {
				if s.Name == patches.SidecarName && s.State.Terminated == nil {
					t.Errorf("sidecar still %+v after the pod completed", s.State)
				}
			}
			t.Logf("Spark %s: apply→driver running %v, →executors running %v, →result %v, →clean %v (pod ended %v before clean)",
				d.Version, driverUp.Sub(start).Round(time.Millisecond), executorsUp.Sub(start).Round(time.Millisecond),
				finished.Sub(start).Round(time.Millisecond), clean.Sub(start).Round(time.Millisecond), clean.Sub(finished).Round(time.Millisecond))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, "spark-pi", metav1.DeleteOptions{})
		})
	}
}
