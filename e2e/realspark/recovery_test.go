package realspark

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/vocab"
)

// TestRecoveryModeExecutors kills running executors' JVMs with SIGKILL:
// their pods end with exit code 137, which Spark describes as "SIGKILL,
// possible container OOM", and Spark 4.2+ then asks for recovery-mode
// executors, which announce one core (SPARK_EXECUTOR_CORES=1) on the same
// pod size so that each runs one task at a time. The replacement Spark
// asks for on the snapshot that shows the loss may still be a normal
// executor: ExecutorPodsAllocator and
// KubernetesClusterSchedulerBackend.doRemoveExecutor, which turns recovery
// mode on, handle that snapshot concurrently (4.3.0 drivers' logs showed
// either order), so the test kills that one too and checks the next. The
// namespace's policy enforces spark.executor.cores=2 (testdata/policy.yaml):
// the normal executors run with 2 cores, the recovery-mode one keeps its
// 1, and the job finishes with every task's row.
func TestRecoveryModeExecutors(t *testing.T) {
	for _, d := range distsFrom(t, 4, 2) {
		t.Run(d.Version, func(t *testing.T) {
			job := sleepy{tasks: 4, sleepMS: 10000, conf: "spark.executor.instances 1\nspark.executor.memory 512m\nspark.driver.memory 512m\n"}
			ns, execs, appID := job.run(t, d)
			killed := map[string]bool{}
			first := nextExecutor(t, ns, execs, killed)
			checkCores(t, first, "2", "100m")
			killBusy(t, ns, first, killed)
			waitFor(t, ns, "the driver in recovery mode", 2*time.Minute, func() bool {
				return strings.Contains(log(ns, sleepyDriver, "spark"), "OOM is detected")
			})
			// The replacement may have been built before recovery mode was
			// on; the executor that replaces it is built well after.
			second := nextExecutor(t, ns, execs, killed)
			t.Logf("the replacement %s, asked for as recovery mode turned on, has SPARK_EXECUTOR_CORES=%s", second.Name, envValue(second, "SPARK_EXECUTOR_CORES"))
			killBusy(t, ns, second, killed)
			recovery := nextExecutor(t, ns, execs, killed)
			checkCores(t, recovery, "1", "100m")
			c := recovery.Spec.Containers[0]
			t.Logf("recovery-mode executor %s as created: %s", recovery.Name, podJSON(recovery))
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(containerProcess(t, ns, recovery.Name, c.Name, "java")) + "/cmdline")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(cmdline), "\x00--cores\x001\x00") {
				t.Errorf("the recovery-mode executor's JVM does not run with --cores 1: %q", strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
			done := waitPod(t, ns, sleepyDriver, "finished", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			job.checkSum(t, log(ns, sleepyDriver, "spark"))
			waitClean(t, ns, appID, 30*time.Second)
		})
	}
}

// nextExecutor waits for a running executor that is not one of killed.
func nextExecutor(t *testing.T, ns string, execs *executors.Tracker, killed map[string]bool) *corev1.Pod {
	t.Helper()
	var next *corev1.Pod
	waitFor(t, ns, "another executor running", 3*time.Minute, func() bool {
		for _, p := range execs.Pods() {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !killed[p.Name] {
				next = p
				return true
			}
		}
		return false
	})
	return next
}

// killBusy kills the executor's JVM once a task runs on it.
func killBusy(t *testing.T, ns string, p *corev1.Pod, killed map[string]bool) {
	t.Helper()
	onIt := "executor " + p.Labels[vocab.LabelExecID] + ", partition"
	waitFor(t, ns, "a task on executor "+p.Name, 3*time.Minute, func() bool {
		return strings.Contains(log(ns, sleepyDriver, "spark"), onIt)
	})
	pid := containerProcess(t, ns, p.Name, p.Spec.Containers[0].Name, "java")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed[p.Name] = true
}

// checkCores wants the executor's announced cores and its CPU request.
func checkCores(t *testing.T, p *corev1.Pod, cores, request string) {
	t.Helper()
	c := p.Spec.Containers[0]
	if got := envValue(p, "SPARK_EXECUTOR_CORES"); got != cores {
		t.Errorf("executor %s SPARK_EXECUTOR_CORES=%q, want %q", p.Name, got, cores)
	}
	if r := c.Resources.Requests.Cpu().String(); r != request {
		t.Errorf("executor %s CPU request %s, want the enforced %s", p.Name, r, request)
	}
}

// podJSON is the pod's metadata and spec as JSON, for the log.
func podJSON(p *corev1.Pod) string {
	out := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: p.Spec}
	out.ManagedFields = nil
	data, _ := json.Marshal(out)
	return string(data)
}

// envValue is the value of the pod's first container's variable name.
func envValue(p *corev1.Pod, name string) string {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
