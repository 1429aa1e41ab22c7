package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// dynamicAllocation runs a job under dynamic allocation with shuffle
// tracking: the backlog makes the JVM ask the sidecar for executors, up
// to two, and once the job is done and the driver idles, the JVM has the
// sidecar delete them after the idle timeout while the driver still runs.
func dynamicAllocation(ctx context.Context, t *testing.T, ns string) {
	eachVersion(ctx, t, func(ctx context.Context, t *testing.T, v string) {
		start := time.Now()
		r := sleepyJob{name: "dynalloc-" + dashed(v), version: v, Job: sleepyjob.Job{Tasks: 12, SleepMS: 1000, Idle: 25, Conf: sleepyjob.DynamicConf(2) + smallExecutors}}.start(ctx, t, ns)
		// Generous: in make test it runs beside the real-Spark suite's
		// JVMs on two cores, where the second executor came up to 85 s
		// after apply (20 s alone) and once not within 3 minutes.
		r.waitFor(ctx, t, "had two executors alive at once", 6*time.Minute, func(context.Context) bool {
			_, most, _, _ := r.execs.Counts()
			return most > 1
		})
		scaledUp := time.Now()
		r.waitFor(ctx, t, "printed the job's sum", 6*time.Minute, func(ctx context.Context) bool {
			return sleepyjob.Summed(r.log(ctx, "spark"))
		})
		jobDone := time.Now()
		// The driver idles now: the idle timeout (5 s) and the pods'
		// termination later, every executor is gone. The driver prints
		// "sleepy: done" before it stops the SparkContext, which would
		// delete the executors too.
		idleEnded := false
		r.waitFor(ctx, t, "had every executor deleted", time.Minute, func(ctx context.Context) bool {
			alive, _, seen, deleted := r.execs.Counts()
			idleEnded = strings.Contains(r.log(ctx, "spark"), sleepyjob.Done)
			return alive == 0 && deleted == seen
		})
		scaledDown := time.Now()
		if idleEnded {
			t.Fatalf("the executors went only when the driver stopped, not after the idle timeout\n%s", r.logTails())
		}
		r.checkSucceeded(ctx, t, r.waitEnded(ctx, t, 2*time.Minute))
		_, most, seen, deleted := r.execs.Counts()
		if most > 2 {
			t.Errorf("%d executors alive at once, over spark.dynamicAllocation.maxExecutors=2", most)
		}
		for _, p := range r.execs.Pods() {
			if p.Labels[vocab.LabelManaged] != "true" {
				t.Errorf("executor %s was not created through the sidecar: no %s label", p.Name, vocab.LabelManaged)
			}
		}
		r.execs.CheckNoDuplicates(t)
		r.waitClean(t, 30*time.Second)
		t.Logf("Spark %s on the real node: %d executors, at most %d at once, %d deleted; apply→%d up %v, →job done %v, →all deleted %v",
			v, seen, most, deleted, most, scaledUp.Sub(start).Round(time.Millisecond),
			jobDone.Sub(start).Round(time.Millisecond), scaledDown.Sub(start).Round(time.Millisecond))
	})
}
