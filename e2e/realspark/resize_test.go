package realspark

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/vocab"
)

// TestExecutorResize runs Spark 4.2+'s ExecutorResizePlugin through the
// sidecar, in namespaces whose policy caps executors at 1Gi
// (testdata/policy.yaml). The pod runner plays no kubelet that
// metrics-server could scrape (the real node's suite runs the real one:
// e2e/node TestHelmInstall/ExecutorResize), so a stand-in
// (testdata/podmetrics-crd.yaml) serves the PodMetrics the plugin reads,
// and the test reports the executor using 900Mi; every 2 s the plugin
// asks to grow it by 10%.
//
//   - OverTheCap: a 984Mi executor (600m + 384m) would grow to 1082.4Mi;
//     the sidecar refuses, naming limits.executor.maxMemory=1Gi, and the
//     executor keeps its size.
//   - NodeWithoutResize: a 896Mi executor would grow to 985.6Mi, within
//     the cap; the sidecar asks the API server, which refuses because the
//     pod runner, like a kubelet without in-place resize, reports no
//     container resources in the pod's status. Spark logs the API server's
//     reason. The real node's kubelet resizes (e2e/node
//     TestHelmInstall/ExecutorResize).
//
// Before the sidecar served resizes, the metrics GET was a 404 and the
// resize a 403 that said the sidecar does not resize executors.
func TestExecutorResize(t *testing.T) {
	t.Parallel() // waits on Spark's timers; see doc.go
	crd, err := os.ReadFile("testdata/podmetrics-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, crd, "apply", "-f", "-")
	kubectl(t, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/pods.metrics.k8s.io")
	for _, d := range distsFrom(t, 4, 2) {
		t.Run(d.Version, func(t *testing.T) {
			t.Run("OverTheCap", func(t *testing.T) {
				resizeRefused(t, d.Version, "600m", 984<<20, 1134978662, "over the policy limit limits.executor.maxMemory=1Gi")
			})
			t.Run("NodeWithoutResize", func(t *testing.T) {
				resizeRefused(t, d.Version, "512m", 896<<20, 1033476505, "Pod running on node without support for resize")
			})
		})
	}
}

// resizeRefused runs the sleepy job with executors of heap (plus 384m
// overhead: size bytes) under the resize plugin, and wants the plugin's
// first step to grown refused with refusal, in the driver's log and an
// ExecutorResizeRefused Event, the executor keeping its size and the job
// finishing.
func resizeRefused(t *testing.T, version, heap string, size, grown int64, refusal string) {
	d := distOf(t, version)
	job := sleepy{tasks: 2, sleepMS: 15000, conf: "spark.executor.instances 1\nspark.executor.memory " + heap + "\nspark.driver.memory 512m\n" +
		"spark.plugins org.apache.spark.scheduler.cluster.k8s.ExecutorResizePlugin\n" +
		"spark.kubernetes.executor.resizeInterval 2s\nspark.kubernetes.executor.resizeThreshold 0.5\n"}
	ns, execs, appID := job.run(t, d)
	exec := nextExecutor(t, ns, execs, map[string]bool{})
	c := exec.Spec.Containers[0]
	if got := c.Resources.Limits.Memory().Value(); got != size {
		t.Fatalf("executor %s memory limit %d, want %d", exec.Name, got, size)
	}
	kubectl(t, []byte(podMetrics(ns, exec.Name, c.Name, "900Mi")), "apply", "-f", "-")
	waitFor(t, ns, "the resize refused", 2*time.Minute, func() bool {
		return strings.Contains(log(ns, sleepyDriver, "spark"), refusal)
	})
	driverLog := log(ns, sleepyDriver, "spark")
	id := exec.Labels[vocab.LabelExecID]
	for _, want := range []string{fmt.Sprintf("Increase executor %s container memory from %d to %d", id, size, grown), "Failed to update " + id} {
		if !strings.Contains(driverLog, want) {
			t.Errorf("the driver's log does not say %q", want)
		}
	}
	for _, line := range strings.Split(driverLog, "\n") {
		if strings.Contains(line, refusal) {
			t.Logf("the driver logs: %s", strings.TrimSpace(line))
			break
		}
	}
	checkEvent(t, ns, "ExecutorResizeRefused", refusal)
	p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), exec.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Spec.Containers[0].Resources; r.Limits.Memory().Value() != size || r.Requests.Memory().Value() != size {
		t.Errorf("executor %s resources %v after the refusals, want memory %d", exec.Name, r, size)
	}
	done := waitPod(t, ns, sleepyDriver, "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
	}
	job.checkSum(t, log(ns, sleepyDriver, "spark"))
	waitClean(t, ns, appID, 30*time.Second)
}

// distOf is the pinned distribution of version.
func distOf(t *testing.T, version string) spark.Dist {
	t.Helper()
	for _, d := range dists {
		if d.Version == version {
			return d
		}
	}
	t.Fatalf("Spark %s is not pinned", version)
	return spark.Dist{}
}

// podMetrics is a PodMetrics object as metrics-server reports one pod.
func podMetrics(ns, pod, container, memory string) string {
	return fmt.Sprintf(`{"apiVersion":"metrics.k8s.io/v1beta1","kind":"PodMetrics","metadata":{"name":%q,"namespace":%q},`+
		`"timestamp":%q,"window":"10s","containers":[{"name":%q,"usage":{"cpu":"10m","memory":%q}}]}`,
		pod, ns, time.Now().UTC().Format(time.RFC3339), container, memory)
}

// checkEvent wants an Event with reason on the driver pod whose message
// holds text.
func checkEvent(t *testing.T, ns, reason, text string) {
	t.Helper()
	waitFor(t, ns, "an Event "+reason, 30*time.Second, func() bool {
		list, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == sleepyDriver && e.Reason == reason && strings.Contains(e.Message, text) {
				t.Logf("Event %s (count %d): %s", reason, e.Count, e.Message)
				return true
			}
		}
		return false
	})
}
