package realspark

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/sparklog"
	"github.com/sparklet/sparklet/vocab"
)

// exampleRepo is where the examples say their files are published.
const exampleRepo = "https://repo.example.com/"

// TestPySpark applies examples/pyspark-pod.yaml with each pinned Spark
// version: sparklet-init fetches examples/groupcount.py from the suite's
// file server and checks its sha256, spark-submit runs it, and its Python
// functions run in Python workers on two executors, with a shuffle between
// them.
func TestPySpark(t *testing.T) {
	e2egate.ProvenOnNode(t, "TestHelmInstall/Workloads/PySpark-<version>, for each pinned version")
	script, err := os.ReadFile("../../examples/groupcount.py")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	for _, d := range dists {
		t.Run(d.Version, func(t *testing.T) {
			manifest := string(example(t, "pyspark-pod.yaml", d))
			if !strings.Contains(manifest, hex.EncodeToString(sum[:])) {
				t.Fatalf("examples/pyspark-pod.yaml does not pin the sha256 of examples/groupcount.py, %x", sum)
			}
			url := files.Serve("py/groupcount.py", script)
			if !strings.Contains(manifest, exampleRepo+"py/groupcount.py") {
				t.Fatalf("examples/pyspark-pod.yaml does not fetch %spy/groupcount.py", exampleRepo)
			}
			manifest = strings.ReplaceAll(manifest, exampleRepo+"py/groupcount.py", url)

			ns := namespace(t)
			execs := trackExecutors(t, ns)
			start := time.Now()
			kubectl(t, []byte(manifest), "apply", "-n", ns, "-f", "-")
			running := waitPod(t, ns, "groupcount", "ran its driver container", 3*time.Minute, containerRunning("spark"))
			appID := running.Labels[vocab.LabelAppID]
			if appID == "" {
				t.Fatalf("driver pod has no %s label", vocab.LabelAppID)
			}
			done := waitPod(t, ns, "groupcount", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			finished := time.Now()
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, "groupcount"))
			}
			driverLog := log(ns, "groupcount", "spark")

			for _, line := range sparklog.GroupCounts(1000, 5) {
				if !strings.Contains(driverLog, line+"\n") {
					t.Errorf("the driver did not print %q\n%s", line, driverLogTail(ns, "groupcount"))
				}
			}

			var names []string
			for _, p := range execs.Pods() {
				names = append(names, p.Name)
				if p.Labels[vocab.LabelAppID] != appID {
					t.Errorf("executor %s has app id %q, want %q", p.Name, p.Labels[vocab.LabelAppID], appID)
				}
			}
			if len(names) != 2 {
				t.Errorf("executor pods %v, want 2", names)
			}
			workers, ok := sparklog.PythonWorkerPods(driverLog)
			if !ok {
				t.Fatalf("no %q line in the driver's log", "Python workers ran in:")
			}
			for _, w := range workers {
				if !slices.Contains(names, w) {
					t.Errorf("the Python function ran in %q, not in an executor pod %v", w, names)
				}
			}
			if onExecutors := sparklog.TasksOnExecutors(driverLog); len(onExecutors) == 0 {
				t.Errorf("the driver's log shows no task finished on an executor\n%s", driverLogTail(ns, "groupcount"))
			}
			clean := waitClean(t, ns, appID, 30*time.Second)
			t.Logf("Spark %s: apply→result %v, →clean %v; Python workers ran in %v",
				d.Version, finished.Sub(start).Round(time.Millisecond), clean.Sub(start).Round(time.Millisecond), workers)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, "groupcount", metav1.DeleteOptions{})
		})
	}
}
