package realspark

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// TestDynamicAllocation runs a job under dynamic allocation with shuffle
// tracking: the backlog makes the JVM ask the sidecar for more executors,
// and once the job is done and the driver idles, the JVM has the sidecar
// delete them after the idle timeout, while the driver still runs. The
// executors carry the settings the policy enforces in its namespace.
func TestDynamicAllocation(t *testing.T) {
	t.Parallel() // waits on Spark's timers; see doc.go
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			provenOnNodeAt(t, d, "TestHelmInstall/DynamicAllocation")
			job := sleepy{tasks: 12, sleepMS: 1000, idle: 20, conf: sleepyjob.DynamicConf(3)}
			start := time.Now()
			ns, execs, appID := job.run(t, d)

			waitFor(t, ns, "more than one executor alive at once", 5*time.Minute, func() bool {
				_, most, _, _ := execs.Counts()
				return most > 1
			})
			scaledUp := time.Now()
			var executor *corev1.Pod
			waitFor(t, ns, "an executor running", 3*time.Minute, func() bool {
				var ok bool
				executor, ok = execs.RunningExecutor()
				return ok
			})
			checkEnforced(t, executor)
			waitFor(t, ns, "the job's sum in the driver's log", 3*time.Minute, func() bool {
				return sleepyjob.Summed(log(ns, sleepyDriver, "spark"))
			})
			jobDone := time.Now()
			// The driver idles now: the idle timeout (5 s) and Spark's
			// deletion grace period (5 s) later, every executor is gone.
			// The driver prints "sleepy: done" before it stops the
			// SparkContext, which would delete the executors too.
			idleEnded := false
			waitFor(t, ns, "every executor deleted", time.Minute, func() bool {
				alive, _, seen, deleted := execs.Counts()
				idleEnded = strings.Contains(log(ns, sleepyDriver, "spark"), sleepyjob.Done)
				return alive == 0 && deleted == seen
			})
			scaledDown := time.Now()
			if idleEnded {
				t.Fatalf("the executors went only when the driver stopped, not after the idle timeout\n%s", driverLogTail(ns, sleepyDriver))
			}
			done := waitPod(t, ns, sleepyDriver, "finished", 2*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			driverLog := log(ns, sleepyDriver, "spark")
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			job.checkSum(t, driverLog)
			_, most, seen, deleted := execs.Counts()
			if most > 3 {
				t.Errorf("%d executors alive at once, over spark.dynamicAllocation.maxExecutors=3", most)
			}
			for _, p := range execs.Pods() {
				if p.Labels[vocab.LabelManaged] != "true" {
					t.Errorf("executor %s was not created through the sidecar: no %s label", p.Name, vocab.LabelManaged)
				}
			}
			execs.CheckNoDuplicates(t)
			waitClean(t, ns, appID, 30*time.Second)
			t.Logf("Spark %s: %d executors, at most %d at once, %d deleted; apply→%d up %v, →job done %v, →all deleted %v",
				d.Version, seen, most, deleted, most, scaledUp.Sub(start).Round(time.Millisecond),
				jobDone.Sub(start).Round(time.Millisecond), scaledDown.Sub(start).Round(time.Millisecond))
		})
	}
}
