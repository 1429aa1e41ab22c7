package node

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// executorResize runs Spark 4.3.0's ExecutorResizePlugin on the real node
// through the chart: the executor (512m + 384m = 896Mi) reports 850Mi in
// use, above the plugin's default threshold of 0.9, and the driver asks
// the sidecar to grow it by 10%. The sidecar resizes it on the pods/resize
// subresource and the kubelet applies it in place: the container's status
// and its memory cgroup hold the new limit, the JVM keeps running and the
// job finishes. 850Mi is under 0.9 of the grown size, so the plugin asks
// once. There is no metrics-server here; the realspark suite's stand-in
// (a CRD serving metrics.k8s.io PodMetrics) reports the usage.
func executorResize(ctx context.Context, t *testing.T, ns string) {
	crd, err := os.ReadFile("../realspark/testdata/podmetrics-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kubectl(ctx, t, "apply", "-f", "-", withStdin(string(crd)))
	kubectl(ctx, t, "wait", "--for=condition=Established", "--timeout=60s", "crd/pods.metrics.k8s.io")
	const size, grown = 896 << 20, 1033476505 // 896Mi x 1.1, in bytes as Spark writes it
	r := sleepyJob{name: "resize", version: "4.3.0", Job: sleepyjob.Job{Tasks: 2, SleepMS: 20000,
		Conf: "spark.executor.instances 1\nspark.executor.memory 512m\n" + smallExecutors +
			"spark.plugins org.apache.spark.scheduler.cluster.k8s.ExecutorResizePlugin\nspark.kubernetes.executor.resizeInterval 2s\n"}}.start(ctx, t, ns)
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
	if got := c.Resources.Limits.Memory().Value(); got != size {
		t.Fatalf("executor %s memory limit %d, want %d", exec.Name, got, size)
	}
	kubectl(ctx, t, "apply", "-f", "-", withStdin(fmt.Sprintf(`{"apiVersion":"metrics.k8s.io/v1beta1","kind":"PodMetrics",`+
		`"metadata":{"name":%q,"namespace":%q},"timestamp":%q,"window":"10s","containers":[{"name":%q,"usage":{"cpu":"10m","memory":"850Mi"}}]}`,
		exec.Name, ns, time.Now().UTC().Format(time.RFC3339), c.Name)))
	var resized *corev1.Pod
	r.waitFor(ctx, t, "had its executor resized by the kubelet", 2*time.Minute, func(ctx context.Context) bool {
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, exec.Name, metav1.GetOptions{})
		if err != nil || p.Spec.Containers[0].Resources.Limits.Memory().Value() != grown {
			return false
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == c.Name && s.Resources != nil && s.Resources.Limits.Memory().Value() == grown {
				resized = p
				return true
			}
		}
		return false
	})
	inCgroup, err := nd.Inspect(resized, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel keeps a cgroup v1 limit in whole pages.
	if d := grown - inCgroup.MemoryLimit; d < 0 || d >= 4096 {
		t.Errorf("the executor's memory cgroup limit is %d after the resize, want %d", inCgroup.MemoryLimit, grown)
	}
	for _, s := range resized.Status.ContainerStatuses {
		if s.Name == c.Name && s.RestartCount != 0 {
			t.Errorf("the executor's container restarted %d times, want an in-place resize", s.RestartCount)
		}
	}
	want := fmt.Sprintf("Increase executor %s container memory from %d to %d", exec.Labels[vocab.LabelExecID], size, grown)
	if !strings.Contains(r.log(ctx, "spark"), want) {
		t.Errorf("the driver's log does not say %q", want)
	}
	r.checkSucceeded(ctx, t, r.waitEnded(ctx, t, 3*time.Minute))
	r.waitClean(t, 30*time.Second)
	t.Logf("executor %s resized in place from %d to %d bytes (memory cgroup limit %d), no restart; the job succeeded",
		exec.Name, int64(size), int64(grown), inCgroup.MemoryLimit)
}
