package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/metricsserver"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// The resize's figures: the executor's container (512m + 384m), the
// plugin's threshold, and the container doubled (resizeFactor 1.0), in
// bytes as Spark writes it (limit × (1 + factor)).
const (
	resizeSize      = 896 << 20
	resizeThreshold = 0.5
	resizeGrown     = 2 * resizeSize
	// holdMiB is what the executor's Python worker fills: with the
	// JVM's own use it takes the container over the threshold.
	holdMiB = 320
)

// executorResize runs Spark 4.3.0's ExecutorResizePlugin on the real node
// through the chart, triggered by the executor's real memory use as
// metrics-server (test/metricsserver) reads it from the kubelet. The
// executor first runs the sleepy job's tasks in its JVM, using less than
// the threshold (0.5 of 896Mi); then a task's Python worker in the same
// container fills 320 MiB and holds it, the off-heap use memoryOverhead
// is for, which takes the container's working set over the threshold. The
// plugin reads that through the sidecar, from the API server's
// aggregation layer and metrics-server, and asks to double the executor;
// the sidecar patches pods/resize and the kubelet resizes the running
// container in place. Doubled, the threshold (896Mi) is above anything
// the executor uses, so the plugin asks once.
func executorResize(ctx context.Context, t *testing.T, ns string) {
	if err := ms.Running(); err != nil {
		t.Fatal(err)
	}
	r := sleepyJob{name: "resize", version: "4.3.0", Job: sleepyjob.Job{Tasks: 2, SleepMS: 20000, HoldMiB: holdMiB, HoldS: 45, Idle: 30,
		Conf: "spark.executor.instances 1\nspark.executor.memory 512m\n" + smallExecutors +
			"spark.plugins org.apache.spark.scheduler.cluster.k8s.ExecutorResizePlugin\nspark.kubernetes.executor.resizeInterval 2s\n" +
			fmt.Sprintf("spark.kubernetes.executor.resizeThreshold %v\nspark.kubernetes.executor.resizeFactor 1.0\n", resizeThreshold)}}.start(ctx, t, ns)
	var exec *corev1.Pod
	r.waitFor(ctx, t, "ran an executor", 3*time.Minute, func(context.Context) bool {
		for _, p := range r.execs.Pods() {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				exec = p
				return true
			}
		}
		return false
	})
	c := exec.Spec.Containers[0]
	if got := c.Resources.Limits.Memory().Value(); got != resizeSize {
		t.Fatalf("executor %s memory limit %d, want %d", exec.Name, got, resizeSize)
	}
	threshold := int64(resizeThreshold * resizeSize)
	baseline := executorBaseline(ctx, t, r, exec.Name, c.Name, threshold)

	// The held memory, as metrics-server reports it, and the kubelet's
	// resize, as the pod's status reports it.
	var crossed metricsserver.Usage
	var seenCrossed time.Time
	var resized *corev1.Pod
	r.waitFor(ctx, t, "had its executor resized by the kubelet", 3*time.Minute, func(ctx context.Context) bool {
		if u, err := metricsserver.ContainerUsage(ctx, cp.Client(), ns, exec.Name, c.Name); err == nil && u.Memory > threshold && crossed.Memory == 0 {
			crossed, seenCrossed = u, time.Now()
		}
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, exec.Name, metav1.GetOptions{})
		if err != nil || p.Spec.Containers[0].Resources.Limits.Memory().Value() != resizeGrown {
			return false
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == c.Name && s.Resources != nil && s.Resources.Limits.Memory().Value() == resizeGrown {
				resized = p
				return true
			}
		}
		return false
	})
	applied := time.Now()
	inCgroup, err := nd.Inspect(resized, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel keeps a cgroup v1 limit in whole pages.
	if d := resizeGrown - inCgroup.MemoryLimit; d < 0 || d >= 4096 {
		t.Errorf("the executor's memory cgroup limit is %d after the resize, want %d", inCgroup.MemoryLimit, resizeGrown)
	}
	for _, s := range resized.Status.ContainerStatuses {
		if s.Name == c.Name && s.RestartCount != 0 {
			t.Errorf("the executor's container restarted %d times, want an in-place resize", s.RestartCount)
		}
	}
	done := r.waitEnded(ctx, t, 4*time.Minute)
	driverLog := r.log(ctx, "spark")
	step := fmt.Sprintf("Increase executor %s container memory from %d to %d", exec.Labels[vocab.LabelExecID], resizeSize, resizeGrown)
	if n := strings.Count(driverLog, "container memory from"); n != 1 || !strings.Contains(driverLog, step) {
		t.Errorf("the driver asked for %d resizes, want one: %q", n, step)
	}
	if !strings.Contains(driverLog, fmt.Sprintf("%s%d MiB", sleepyjob.Held, holdMiB)) {
		t.Errorf("the driver's log does not say the task held %d MiB", holdMiB)
	}
	r.checkSucceeded(ctx, t, done)
	r.waitClean(t, 30*time.Second)
	if crossed.Memory == 0 {
		t.Fatalf("metrics-server never reported executor %s over %d bytes, yet it was resized", exec.Name, threshold)
	}
	t.Logf("executor %s: metrics-server reported its working set at %d bytes at most before the held memory, under the threshold %d; "+
		"%d bytes in the sample of %s (seen %s later); resized in place from %d to %d bytes (memory cgroup limit %d), "+
		"seen %.1f s after that sample's time; no restart; the job succeeded",
		exec.Name, baseline, threshold, crossed.Memory, crossed.Timestamp.UTC().Format(time.RFC3339),
		seenCrossed.Sub(crossed.Timestamp).Round(100*time.Millisecond), int64(resizeSize), int64(resizeGrown),
		inCgroup.MemoryLimit, applied.Sub(crossed.Timestamp).Seconds())
}

// executorBaseline follows the executor's usage through metrics-server
// until the job's JVM tasks are done, and wants it reported under
// threshold and the executor not resized meanwhile: what crosses the
// threshold is the memory held after them. It returns the most reported.
func executorBaseline(ctx context.Context, t *testing.T, r *sleepyRun, pod, container string, threshold int64) int64 {
	t.Helper()
	var most int64
	samples := 0
	r.waitFor(ctx, t, "summed the ids", 5*time.Minute, func(ctx context.Context) bool {
		if u, err := metricsserver.ContainerUsage(ctx, cp.Client(), r.ns, pod, container); err == nil {
			samples++
			most = max(most, u.Memory)
		}
		return sleepyjob.Summed(r.log(ctx, "spark"))
	})
	p, err := cp.Client().CoreV1().Pods(r.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case samples == 0:
		t.Fatalf("metrics-server reported no usage of executor %s while its JVM tasks ran\n%s", pod, ms.Logs(20))
	case most > threshold:
		t.Fatalf("executor %s used %d bytes before the held memory, over the threshold %d: the resize would not show the held memory's effect", pod, most, threshold)
	case p.Spec.Containers[0].Resources.Limits.Memory().Value() != resizeSize:
		t.Fatalf("executor %s resized before the held memory: %v", pod, p.Spec.Containers[0].Resources)
	}
	return most
}
