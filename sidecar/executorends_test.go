package sidecar

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

func failedExecutor(id int, mutate func(*corev1.PodStatus)) *corev1.Pod {
	p := executorIn(id, corev1.PodFailed)
	mutate(&p.Status)
	return p
}

// runningExecutor is an executor whose phase is still Running.
func runningExecutor(restart corev1.RestartPolicy, mutate func(*corev1.PodStatus)) *corev1.Pod {
	p := executorIn(1, corev1.PodRunning)
	p.Spec.RestartPolicy = restart
	mutate(&p.Status)
	return p
}

func terminatedWith(code int32, reason string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark-kubernetes-executor",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	}
}

func TestFailureOf(t *testing.T) {
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		reason string // "" for no failure
		detail string
		oom    bool
	}{
		{"running", executorIn(1, corev1.PodRunning), "", "", false},
		{"succeeded", executorIn(1, corev1.PodSucceeded), "", "", false},
		{"OOMKilled", failedExecutor(1, terminatedWith(137, "OOMKilled")), "OOMKilled", "", true},
		{"Spark's OutOfMemoryError exit", failedExecutor(1, terminatedWith(52, "Error")), "OutOfMemoryError (exit code 52)", "", true},
		{"exit 1", failedExecutor(1, terminatedWith(1, "Error")), "exit code 1", "", false},
		{"SIGKILL", failedExecutor(1, terminatedWith(137, "Error")), "exit code 137 (SIGKILL)", "", false},
		{"evicted", failedExecutor(1, func(s *corev1.PodStatus) {
			s.Reason, s.Message = "Evicted", "The node was low on resource: memory."
		}), "Evicted", "The node was low on resource: memory.", false},
		{"preempted while running", func() *corev1.Pod {
			p := executorIn(1, corev1.PodRunning)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "PreemptionByScheduler", Message: "Preempted in order to admit critical pod"}}
			return p
		}(), "disrupted (PreemptionByScheduler)", "Preempted in order to admit critical pod", false},
		{"OOMKilled, the phase not yet Failed", runningExecutor(corev1.RestartPolicyNever, terminatedWith(137, "OOMKilled")), "OOMKilled", "", true},
		{"exit 1, the phase not yet Failed", runningExecutor(corev1.RestartPolicyNever, terminatedWith(1, "Error")), "exit code 1", "", false},
		{"exit 0, the phase not yet Succeeded", runningExecutor(corev1.RestartPolicyNever, terminatedWith(0, "Completed")), "", "", false},
		{"ended in a pod that restarts it", runningExecutor(corev1.RestartPolicyOnFailure, terminatedWith(1, "Error")), "", "", false},
		{"failed without a container status", failedExecutor(1, func(s *corev1.PodStatus) { s.Reason = "NodeLost" }), "Failed", "NodeLost", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := failureOf(c.pod)
			switch {
			case c.reason == "" && f != nil:
				t.Errorf("failure %+v, want none", f)
			case c.reason == "":
			case f == nil:
				t.Errorf("no failure, want %s", c.reason)
			case f.reason != c.reason || f.detail != c.detail || f.oom != c.oom:
				t.Errorf("failure %+v, want reason %q detail %q oom %v", *f, c.reason, c.detail, c.oom)
			}
		})
	}
}

// observe hands ends one version of pod, through the executors'
// informer transform.
func observe(t *testing.T, ends *executorEnds, pod *corev1.Pod, gone bool) {
	t.Helper()
	obj, err := podTransform(false)(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	ends.observe(obj, gone)
}

func deleting(p *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// Failures are counted once per executor, the JVM's own deletions are
// not failures, anyone else's are, and one Event counts them all.
func TestExecutorEndsCountOnceAndIgnoreTheJVMsDeletions(t *testing.T) {
	client := fake.NewClientset(driver())
	ends := newExecutorEnds(testRecorder(client), time.Hour)
	ends.every = time.Hour // one Event for the first failure, the rest at close
	oom := failedExecutor(1, terminatedWith(137, "OOMKilled"))
	observe(t, ends, executorIn(1, corev1.PodRunning), false)
	observe(t, ends, oom, false)
	first := waitEvent(t, client, "ExecutorsFailed", func(corev1.Event) bool { return true })
	if first.Message != "1 executor(s) failed: 1 OOMKilled (pi-exec-1)" {
		t.Errorf("first Event: %q", first.Message)
	}
	ends.release(oom.Name) // Spark deletes the failed executor: counted already
	observe(t, ends, deleting(oom.DeepCopy()), false)
	observe(t, ends, oom, true)

	ends.release("pi-exec-2") // a downscale: SIGTERM, exit 143, not a failure
	observe(t, ends, deleting(failedExecutor(2, terminatedWith(143, "Error"))), false)

	observe(t, ends, deleting(executorIn(3, corev1.PodRunning)), false) // kubectl delete
	observe(t, ends, executorIn(3, corev1.PodRunning), true)

	observe(t, ends, failedExecutor(4, terminatedWith(52, "Error")), false)
	observe(t, ends, failedExecutor(5, terminatedWith(137, "OOMKilled")), false)
	observe(t, ends, failedExecutor(6, terminatedWith(137, "OOMKilled")), false)

	got := ends.close()
	observe(t, ends, failedExecutor(7, terminatedWith(1, "Error")), false) // after the end: not counted
	if got.total != 5 || got.nOOM != 4 || !got.ran {
		t.Errorf("counts: total %d, OOM %d, ran %v; want 5, 4, true", got.total, got.nOOM, got.ran)
	}
	want := "5 executor(s) failed: 3 OOMKilled (pi-exec-1, pi-exec-5, pi-exec-6); " +
		"1 OutOfMemoryError (exit code 52) (pi-exec-4); 1 deleted while running (pi-exec-3)"
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		evs := eventsWithReason(t, client, "ExecutorsFailed")
		return len(evs) == 2 && slices.ContainsFunc(evs, func(e corev1.Event) bool { return e.Message == want }), nil
	})
	if err != nil {
		t.Errorf("want a second ExecutorsFailed Event %q; have %+v", want, eventsWithReason(t, client, "ExecutorsFailed"))
	}
}

func TestFailureSummaryNamesAFewAndTheDetail(t *testing.T) {
	var f failureCounts
	for i := range 5 {
		f.add("pi-exec-"+string(rune('1'+i)), &executorFailure{reason: "Evicted", detail: "The node was low on resource: memory.\nmore"})
	}
	f.add("pi-exec-9", &executorFailure{reason: "exit code 1"})
	want := "6 executor(s) failed: 5 Evicted (pi-exec-1, pi-exec-2, pi-exec-3, ...): The node was low on resource: memory.; 1 exit code 1 (pi-exec-9)"
	if got := f.summary(); got != want {
		t.Errorf("summary:\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(f.note(), "\n") || !strings.HasPrefix(f.note(), "; on the way 6 executor(s) failed") {
		t.Errorf("note %q", f.note())
	}
}

// The first executor seen without a node starts the deadline; an
// ExecutorsNotScheduled Event says what the scheduler said when it
// passes, and the counts say how long the executors waited.
func TestExecutorEndsWarnWhenNoneIsScheduledInTime(t *testing.T) {
	client := fake.NewClientset(driver())
	ends := newExecutorEnds(testRecorder(client), 50*time.Millisecond)
	pending := executorIn(1, corev1.PodPending)
	pending.Spec.NodeName = ""
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	observe(t, ends, pending, false)
	ev := waitEvent(t, client, "ExecutorsNotScheduled", func(corev1.Event) bool { return true })
	if !strings.Contains(ev.Message, "within 50ms") || !strings.Contains(ev.Message, "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.") {
		t.Errorf("ExecutorsNotScheduled: %q", ev.Message)
	}
	got := ends.close()
	if got.scheduled || got.waited < 50*time.Millisecond {
		t.Errorf("scheduled %v, waited %v; want false and at least 50ms", got.scheduled, got.waited)
	}

	client = fake.NewClientset(driver())
	rec := testRecorder(client)
	ends = newExecutorEnds(rec, time.Hour)
	observe(t, ends, pending, false)
	scheduled := pending.DeepCopy()
	scheduled.Spec.NodeName = "node-1"
	observe(t, ends, scheduled, false)
	ends.warnOverdue() // as the deadline's timer would, had it not been stopped
	rec.flush(5 * time.Second)
	if evs := eventsWithReason(t, client, "ExecutorsNotScheduled"); len(evs) != 0 {
		t.Errorf("ExecutorsNotScheduled after an executor was scheduled: %+v", evs)
	}
	if got := ends.close(); !got.scheduled || got.waited != 0 {
		t.Errorf("scheduled %v, waited %v; want true and 0", got.scheduled, got.waited)
	}
}
