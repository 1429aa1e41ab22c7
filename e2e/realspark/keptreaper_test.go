package realspark

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keptReaperWindow is the namespace's logs.keepFailedExecutorsSeconds in
// testdata/policy.yaml: long enough for the job to end within it. In one
// CI run the replacement executor registered 78 s after the kill, its JVM
// sharing the pod runner's CPU group with three other tests' JVMs while
// the real node's tests ran beside.
const keptReaperWindow = 150 * time.Second

// TestKeptExecutorRemovedAfterItsDriverEnded kills a busy executor's JVM
// on Spark 4.3.0 in a namespace that keeps failed executors 150 s; the job
// finishes on the other executor and the driver pod ends well within the
// window, its sidecar with it. The kept executor outlives the sidecar's
// cleanup and is then deleted by the webhook's reaper within seconds of
// its window's end, although the driver pod that owns it stays.
func TestKeptExecutorRemovedAfterItsDriverEnded(t *testing.T) {
	t.Parallel() // waits on Spark and the window; see doc.go
	d := distOf(t, "4.3.0")
	job := sleepy{tasks: 2, sleepMS: 10000, conf: "spark.executor.instances 2\nspark.executor.memory 512m\nspark.driver.memory 512m\n"}
	ns, execs, _ := job.run(t, d)
	killed := map[string]bool{}
	victim := nextExecutor(t, ns, execs, killed)
	killBusy(t, ns, victim, killed)

	_, until := waitKept(t, ns, victim.Name)
	if w := time.Until(until); w <= 0 || w > keptReaperWindow+time.Second {
		t.Fatalf("kept until %v from now, want within the policy's %v", w.Round(time.Second), keptReaperWindow)
	}

	done := waitPod(t, ns, sleepyDriver, "finished", time.Until(until), phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded: the job goes on with the other executor\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
	}
	ended := time.Now()
	if left := until.Sub(ended); left < 5*time.Second {
		t.Fatalf("the driver ended only %v before the window's end; the test needs it well before", left.Round(time.Millisecond))
	}
	// The sidecar's cleanup has deleted every other executor and left
	// the kept one, whose owner, the driver pod, stays.
	p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), victim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kept executor %s after the driver ended: %v; want it kept until %v", victim.Name, err, until.Format(time.RFC3339))
	}
	if p.DeletionTimestamp != nil {
		t.Fatalf("kept executor %s is being deleted %v before its window's end", victim.Name, until.Sub(p.DeletionTimestamp.Time))
	}
	for _, e := range execs.Pods() {
		if e.Name == victim.Name {
			continue
		}
		if _, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), e.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("executor %s not kept but still there after the driver ended: %v", e.Name, err)
		}
	}

	waitForPod(t, ns, sleepyDriver, "the kept executor deleted after its window", time.Until(until)+30*time.Second, func() bool {
		_, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), victim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	late := time.Since(until)
	t.Logf("Spark %s: driver ended %v before the end of executor %s's window; the executor was gone %v after it",
		d.Version, until.Sub(ended).Round(time.Second), victim.Name, late.Round(time.Millisecond))
	if late < -500*time.Millisecond || late > 5*time.Second {
		t.Errorf("the kept executor was gone %v after the end of its window, want within 5 s and not before", late.Round(time.Millisecond))
	}
	if _, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), sleepyDriver, metav1.GetOptions{}); err != nil {
		t.Errorf("driver pod: %v; want it still there, so that its garbage collection did not delete the executor", err)
	}
	webhookLog, _ := os.ReadFile(env.LogFile())
	logged := false
	for _, line := range strings.Split(string(webhookLog), "\n") {
		logged = logged || strings.Contains(line, "deleted a failed executor kept for its logs") && strings.Contains(line, `"pod":"`+victim.Name+`"`)
	}
	if !logged {
		t.Errorf("the webhook's log (%s) tells of no deletion of %s", env.LogFile(), victim.Name)
	}
}
