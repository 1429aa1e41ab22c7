package realspark

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// TestDriverKilled kills the driver JVM with SIGKILL mid-job, so Spark's
// own stop() never runs: the sidecar sees the Spark container end and
// deletes the executors within seconds, and the pod fails, ending as
// DriverKilled by SIGKILL.
func TestDriverKilled(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			provenOnNodeAt(t, d, "TestHelmInstall/KillDriverJVM")
			job := sleepy{tasks: 40, sleepMS: 1000, conf: sleepyjob.FixedConf}
			ns, execs, appID := job.run(t, d)
			waitTasks(t, ns, 2)

			killJVM(t, ns, sleepyDriver, appID, "Spark "+d.Version+": executors")
			done := waitPod(t, ns, sleepyDriver, "finished", time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodFailed {
				t.Errorf("driver pod %s after its JVM was killed, want Failed", done.Status.Phase)
			}
			checkEnded(t, ns, sleepyDriver, done, vocab.EndDriverKilled, "exit code 137 (SIGKILL)")
			if _, _, seen, _ := execs.Counts(); seen != 2 {
				t.Errorf("%d executor pods, want 2", seen)
			}
			execs.CheckNoDuplicates(t)
		})
	}
}

// TestSidecarKilled kills the sidecar with SIGKILL while the JVM creates
// its executors. The runner restarts it, as the kubelet restarts a native
// sidecar; the restarted sidecar keeps the JVM's token and rebuilds its
// cache from the API server, and the job finishes.
func TestSidecarKilled(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			provenOnNodeAt(t, d, "TestHelmInstall/KillSidecar")
			job := sleepy{tasks: 20, sleepMS: 1000, conf: sleepyjob.FixedConf}
			ns, execs, appID := job.run(t, d)
			waitFor(t, ns, "an executor pod created", 3*time.Minute, func() bool {
				_, _, seen, _ := execs.Counts()
				return seen > 0
			})
			// The image's /sparklet hands over to /sparklet-sidecar, whose
			// comm the kernel cuts to 15 bytes.
			pid := containerProcess(t, ns, sleepyDriver, patches.SidecarName, "sparklet-sideca")
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitPod(t, ns, sleepyDriver, "restarted its sidecar", time.Minute, func(p *corev1.Pod) bool {
				for _, s := range p.Status.InitContainerStatuses {
					if s.Name == patches.SidecarName {
						return s.RestartCount > 0 && s.Started != nil && *s.Started
					}
				}
				return false
			})
			done := waitPod(t, ns, sleepyDriver, "finished", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			job.checkSum(t, log(ns, sleepyDriver, "spark"))
			waitClean(t, ns, appID, 30*time.Second)
			// The kill may land between the API server creating an executor
			// and the JVM hearing of it: the JVM counts that create as failed
			// (ExecutorPodsAllocator.requestNewExecutors, Spark v3.5.0 and
			// v4.0.0) and asks for another under a new spark-exec-id, as it
			// would after a real API server died mid-request. So one executor
			// beyond the two asked for may run, never a duplicate.
			_, most, seen, _ := execs.Counts()
			if most > 3 {
				t.Errorf("%d executors alive at once, want at most 3 (2 and one whose create the kill interrupted)", most)
			}
			t.Logf("Spark %s: %d executor pods, at most %d alive at once", d.Version, seen, most)
			execs.CheckNoDuplicates(t)
		})
	}
}

// TestAPIServerRestart restarts kube-apiserver mid-job: the sidecar's
// informers reconnect, the JVM's watch is served from their cache, and
// the job finishes.
func TestAPIServerRestart(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			provenOnNodeAt(t, d, "TestHelmInstall/RestartAPIServer")
			job := sleepy{tasks: 30, sleepMS: 1000, conf: sleepyjob.FixedConf}
			ns, execs, appID := job.run(t, d)
			waitTasks(t, ns, 2)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			restart := time.Now()
			if err := env.Cluster.RestartAPIServer(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("Spark %s: kube-apiserver back after %v", d.Version, time.Since(restart).Round(time.Millisecond))
			done := waitPod(t, ns, sleepyDriver, "finished", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			job.checkSum(t, log(ns, sleepyDriver, "spark"))
			// The executors' pods end within their 30 s grace period; a
			// deletion the runner's informer sees only after its relist
			// following the restart can take that long on a loaded machine.
			waitClean(t, ns, appID, time.Minute)
			if _, _, seen, _ := execs.Counts(); seen != 2 {
				t.Errorf("%d executor pods, want 2", seen)
			}
			execs.CheckNoDuplicates(t)
		})
	}
}

// killJVM kills the JVM of pod's Spark container with SIGKILL and checks
// that what application appID left (what, for the log) is gone within 5 s.
func killJVM(t *testing.T, ns, pod, appID, what string) {
	t.Helper()
	pid := containerProcess(t, ns, pod, "spark", "java")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	took := waitClean(t, ns, appID, 30*time.Second).Sub(killed)
	t.Logf("%s gone %v after the JVM was killed", what, took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("%s gone %v after the JVM was killed, want within 5s", what, took.Round(time.Millisecond))
	}
}

// waitTasks waits until the job is under way: n tasks finished.
func waitTasks(t *testing.T, ns string, n int) {
	t.Helper()
	waitFor(t, ns, strconv.Itoa(n)+" tasks finished", 3*time.Minute, func() bool {
		return strings.Count(log(ns, sleepyDriver, "spark"), "INFO TaskSetManager: Finished task") >= n
	})
}

// containerProcess returns the pid of a running container's process and
// checks that it runs the program named comm.
func containerProcess(t *testing.T, ns, pod, container, comm string) int {
	t.Helper()
	var pid int
	// The runner's shim execs the container's program once it has set
	// the namespaces up.
	waitFor(t, ns, "container "+container+" running "+comm, 30*time.Second, func() bool {
		var ok bool
		if pid, ok = env.Runner.ContainerPID(ns, pod, container); !ok {
			return false
		}
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return err == nil && strings.TrimSpace(string(data)) == comm
	})
	return pid
}
