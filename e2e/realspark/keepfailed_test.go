package realspark

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestFailedExecutorKept kills a busy executor's JVM in a namespace whose
// policy keeps failed executors 20 s: Spark asks to delete the failed pod,
// which stays, Failed and labelled with when it goes, for the window, and
// is then deleted while the job goes on with a new executor.
func TestFailedExecutorKept(t *testing.T) {
	t.Parallel() // waits on Spark's timers; see doc.go
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			job := sleepy{tasks: 6, sleepMS: 10000, conf: "spark.executor.instances 1\nspark.executor.memory 512m\nspark.driver.memory 512m\n"}
			ns, execs, _ := job.run(t, d)
			killed := map[string]bool{}
			victim := nextExecutor(t, ns, execs, killed)
			killBusy(t, ns, victim, killed)
			kept, end := waitKept(t, ns, victim.Name)
			if kept.Status.Phase != corev1.PodFailed || kept.DeletionTimestamp != nil {
				t.Errorf("kept executor %s: phase %s, deletionTimestamp %v; want Failed and not deleted", kept.Name, kept.Status.Phase, kept.DeletionTimestamp)
			}
			if w := time.Until(end); w <= 0 || w > 21*time.Second {
				t.Errorf("kept until %v from now, want within the policy's 20 s", w.Round(time.Second))
			}
			waitFor(t, ns, "the kept executor deleted after its window", time.Minute, func() bool {
				_, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), victim.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
			late := time.Since(end)
			t.Logf("Spark %s: failed executor %s kept, then gone %v after the end of its window", d.Version, victim.Name, late.Round(time.Millisecond))
			if late < -500*time.Millisecond {
				t.Errorf("the kept executor was gone %v before the end of its window", -late.Round(time.Millisecond))
			}
			done := waitPod(t, ns, sleepyDriver, "finished", 4*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded: the job goes on with a new executor\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			job.checkSum(t, log(ns, sleepyDriver, "spark"))
		})
	}
}

// waitKept waits until the failed executor ns/name is labelled
// vocab.LabelKeptUntil and returns it with the time the label holds.
func waitKept(t *testing.T, ns, name string) (*corev1.Pod, time.Time) {
	t.Helper()
	var kept *corev1.Pod
	waitFor(t, ns, "the failed executor labelled "+vocab.LabelKeptUntil, 2*time.Minute, func() bool {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		kept = p
		return err == nil && p.Labels[vocab.LabelKeptUntil] != ""
	})
	until, err := strconv.ParseInt(kept.Labels[vocab.LabelKeptUntil], 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", vocab.LabelKeptUntil, kept.Labels[vocab.LabelKeptUntil], err)
	}
	return kept, time.Unix(until, 0)
}
