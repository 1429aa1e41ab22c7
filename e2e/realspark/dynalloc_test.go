package realspark

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestDynamicAllocation runs a job under dynamic allocation with shuffle
// tracking: the backlog makes the JVM ask the sidecar for more executors,
// and once the job is done and the driver idles, the JVM has the sidecar
// delete them after the idle timeout, while the driver still runs. The
// executors carry the settings the policy enforces in its namespace.
func TestDynamicAllocation(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			job := sleepy{tasks: 12, sleepMS: 1000, idle: 20, conf: dynamicConf}
			start := time.Now()
			ns, execs, appID := job.run(t, d)

			waitFor(t, ns, "more than one executor alive at once", 3*time.Minute, func() bool {
				_, most, _, _ := execs.counts()
				return most > 1
			})
			scaledUp := time.Now()
			var executor *corev1.Pod
			waitFor(t, ns, "an executor running", 3*time.Minute, func() bool {
				var ok bool
				executor, ok = execs.runningExecutor()
				return ok
			})
			checkEnforced(t, executor)
			waitFor(t, ns, "the job's sum in the driver's log", 3*time.Minute, func() bool {
				return sumLine.MatchString(log(ns, sleepyDriver, "spark"))
			})
			jobDone := time.Now()
			// The driver idles now: the idle timeout (5 s) and Spark's
			// deletion grace period (5 s) later, every executor is gone.
			// The driver prints "sleepy: done" before it stops the
			// SparkContext, which would delete the executors too.
			idleEnded := false
			waitFor(t, ns, "every executor deleted", time.Minute, func() bool {
				alive, _, seen, deleted := execs.counts()
				idleEnded = strings.Contains(log(ns, sleepyDriver, "spark"), "sleepy: done")
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
			_, most, seen, deleted := execs.counts()
			if most > 3 {
				t.Errorf("%d executors alive at once, over spark.dynamicAllocation.maxExecutors=3", most)
			}
			for _, p := range execs.pods() {
				if p.Labels[vocab.LabelManaged] != "true" {
					t.Errorf("executor %s was not created through the sidecar: no %s label", p.Name, vocab.LabelManaged)
				}
			}
			execs.checkNoDuplicates(t)
			waitClean(t, ns, appID, 30*time.Second)
			t.Logf("Spark %s: %d executors, at most %d at once, %d deleted; apply→%d up %v, →job done %v, →all deleted %v",
				d.Version, seen, most, deleted, most, scaledUp.Sub(start).Round(time.Millisecond),
				jobDone.Sub(start).Round(time.Millisecond), scaledDown.Sub(start).Round(time.Millisecond))
		})
	}
}

// dynamicConf turns on dynamic allocation with shuffle tracking, from no
// executors up to three, and releases an executor after 5 idle seconds.
// An executor that holds shuffle files waits for the shuffle timeout
// instead of the idle timeout (ExecutorMonitor.updateTimeout, Spark
// v3.5.0 core/src/main/scala/org/apache/spark/scheduler/dynalloc/
// ExecutorMonitor.scala), infinite by default.
const dynamicConf = `spark.dynamicAllocation.enabled true
spark.dynamicAllocation.shuffleTracking.enabled true
spark.executor.instances 0
spark.dynamicAllocation.minExecutors 0
spark.dynamicAllocation.maxExecutors 3
spark.dynamicAllocation.executorIdleTimeout 5s
spark.dynamicAllocation.shuffleTracking.timeout 5s
spark.dynamicAllocation.schedulerBacklogTimeout 1s
spark.executor.memory 512m
spark.driver.memory 512m
`
