package node

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// sleepyJob is a run of package sleepyjob's job (Tasks tasks of SleepMS
// each in the executors' JVMs, their ids summed through a shuffle, then
// Idle seconds with no work) as a plain driver pod through the installed
// chart.
type sleepyJob struct {
	name    string // the driver pod's and its ConfigMap's
	version string // of apache/spark
	sleepyjob.Job
}

// sleepyRun is a started sleepyJob.
type sleepyRun struct {
	sleepyJob
	ns, appID string
	execs     *executors.Tracker
}

// start creates the job's ConfigMap and driver pod in ns, follows its
// executors and returns once the driver's Spark container runs. The
// driver asks for little: the node has two cores.
func (j sleepyJob) start(ctx context.Context, t *testing.T, ns string) *sleepyRun {
	t.Helper()
	cms := cp.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, j.ConfigMap(j.name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}) })
	pod := j.DriverPod(j.name, j.version, cm.Name, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	})
	pods := cp.Client().CoreV1().Pods(ns)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pods.Delete(context.Background(), j.name, metav1.DeleteOptions{}) })
	appID := created.Labels[vocab.LabelAppID]
	if appID == "" {
		t.Fatalf("driver %s admitted without the %s label: not injected", j.name, vocab.LabelAppID)
	}
	r := &sleepyRun{sleepyJob: j, ns: ns, appID: appID, execs: executors.Track(t, cp.Client(), ns, vocab.LabelAppID+"="+appID)}
	r.waitPod(ctx, t, "ran its Spark container", 3*time.Minute, func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "spark" && s.State.Running != nil {
				return true
			}
		}
		return false
	})
	return r
}

// smallExecutors asks for executors of a tenth of a core: the node has two.
const smallExecutors = "spark.kubernetes.executor.request.cores 100m\n"

// log is the container's log as `kubectl logs` gives it, or "" while the
// API server or the kubelet cannot give it (the API server restarting).
func (r *sleepyRun) log(ctx context.Context, container string) string {
	data, err := cp.Client().CoreV1().Pods(r.ns).GetLogs(r.name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(data)
}

// logTails is the end of the driver's and the sidecar's logs, for failures.
func (r *sleepyRun) logTails() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, c := range []string{"spark", patches.SidecarName} {
		b.WriteString("--- " + c + " log (tail):\n" + tail(r.log(ctx, c), 30) + "\n")
	}
	return b.String()
}

// waitFor polls cond until it holds, failing t after timeout.
func (r *sleepyRun) waitFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func(context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("%s never %s within %v: %v\n%s", r.name, what, timeout, err, r.logTails())
	}
}

// waitPod waits until cond holds for the driver pod, and returns it.
func (r *sleepyRun) waitPod(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	r.waitFor(ctx, t, what, timeout, func(ctx context.Context) bool {
		p, err := cp.Client().CoreV1().Pods(r.ns).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return cond(p)
	})
	return last
}

// waitEnded waits for the driver pod to end and returns it.
func (r *sleepyRun) waitEnded(ctx context.Context, t *testing.T, timeout time.Duration) *corev1.Pod {
	t.Helper()
	return r.waitPod(ctx, t, "ended", timeout, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// waitTasks waits until the job is under way: n tasks finished.
func (r *sleepyRun) waitTasks(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	r.waitFor(ctx, t, strconv.Itoa(n)+" tasks finished", 3*time.Minute, func(ctx context.Context) bool {
		return strings.Count(r.log(ctx, "spark"), "INFO TaskSetManager: Finished task") >= n
	})
}

// checkSucceeded checks that the driver pod Succeeded with the job's sum.
func (r *sleepyRun) checkSucceeded(ctx context.Context, t *testing.T, done *corev1.Pod) {
	t.Helper()
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, r.logTails())
	}
	if err := r.CheckSum(r.log(ctx, "spark")); err != nil {
		t.Errorf("%v\n%s", err, r.logTails())
	}
}

// waitClean waits until the application left nothing: no executor pod,
// ConfigMap or PVC of its id.
func (r *sleepyRun) waitClean(t *testing.T, timeout time.Duration) time.Time {
	t.Helper()
	return executors.WaitClean(t, cp.Client(), r.ns, r.appID, timeout)
}

// kill sends SIGKILL to the process of the driver pod's container whose
// command line contains match, as the kernel's OOM killer or a crash ends
// it: found in the container's cgroup on the node, signalled from the
// host. It waits for the process to be there first.
func (r *sleepyRun) kill(ctx context.Context, t *testing.T, container, match string) {
	t.Helper()
	var pid int
	r.waitPod(ctx, t, "ran "+match+" in "+container, 30*time.Second, func(p *corev1.Pod) bool {
		pids, err := nd.Processes(p, container)
		if err != nil {
			return false
		}
		for _, candidate := range pids {
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(candidate) + "/cmdline")
			if err == nil && strings.Contains(string(cmdline), match) {
				pid = candidate
				return true
			}
		}
		return false
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s's %s (pid %d): %v", container, match, pid, err)
	}
}
