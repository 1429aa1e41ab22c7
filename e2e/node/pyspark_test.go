package node

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

	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/test/sparklog"
	"github.com/sparklet/sparklet/vocab"
)

// exampleScriptURL is where examples/pyspark-pod.yaml says its script is
// published.
const exampleScriptURL = "https://repo.example.com/py/groupcount.py"

// pySpark applies examples/pyspark-pod.yaml with the -python3 image of
// version, its script published on the suite's file server: sparklet-init
// fetches examples/groupcount.py and checks its sha256, spark-submit runs
// it, and its Python function runs in Python workers on the two executors,
// with a shuffle between them. The executors' logs are read with `kubectl
// logs -f` while they run, the driver's once it has Succeeded.
func pySpark(ctx context.Context, t *testing.T, files *fileserver.Server, ns, version string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	script, err := os.ReadFile("../../examples/groupcount.py")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	manifest := string(fixtures.ExampleFor(t, "../../examples/pyspark-pod.yaml", version, ""))
	if !strings.Contains(manifest, hex.EncodeToString(sum[:])) || !strings.Contains(manifest, exampleScriptURL) {
		t.Fatalf("examples/pyspark-pod.yaml does not fetch %s with the sha256 of examples/groupcount.py, %x", exampleScriptURL, sum)
	}
	if !strings.Contains(manifest, "image: apache/spark:"+version+"-python3\n") {
		t.Fatalf("examples/pyspark-pod.yaml does not name a -python3 image:\n%s", manifest)
	}
	manifest = strings.ReplaceAll(manifest, exampleScriptURL, files.Serve("py/groupcount.py", script))
	name := "groupcount-" + strings.ReplaceAll(version, ".", "-")
	manifest = strings.Replace(manifest, "name: groupcount\n", "name: "+name+"\n", 1)

	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(manifest))
	t.Cleanup(func() { _ = cp.Client().CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	appID := driverAppID(ctx, t, ns, name)
	followed := followExecutors(ctx, ns, appID)
	done := waitPodPhase(ctx, t, ns, name, corev1.PodSucceeded)
	t.Logf("PySpark %s on the real node: kubectl apply to Succeeded in %s", version, time.Since(start).Round(100*time.Millisecond))
	if done.Spec.NodeName != node.Name {
		t.Errorf("driver ran on %q, want the real node", done.Spec.NodeName)
	}

	driverLog := podLogs(ctx, t, ns, name, "spark")
	for _, line := range sparklog.GroupCounts(1000, 5) {
		if !strings.Contains(driverLog, line+"\n") {
			t.Errorf("the driver did not print %q\n%s", line, tail(driverLog, 40))
		}
	}
	// Nothing of the application left: executor pods, ConfigMaps, PVCs.
	executors.WaitClean(t, cp.Client(), ns, appID, time.Minute)
	logs := followed.done(t)
	var pods []string
	for _, l := range logs {
		pods = append(pods, l.pod)
	}
	if len(pods) != 2 {
		t.Errorf("followed executors %v, want the two the pod asks for", pods)
	}
	workers, ok := sparklog.PythonWorkerPods(driverLog)
	if !ok {
		t.Fatalf("no %q line in the driver's log\n%s", "Python workers ran in:", tail(driverLog, 40))
	}
	for _, w := range workers {
		if !slices.Contains(pods, w) {
			t.Errorf("the Python function ran in %q, not in an executor pod %v", w, pods)
		}
	}
	// Each executor the driver saw finish a task shows, in its own log,
	// that it ran tasks.
	ids := sparklog.TasksOnExecutors(driverLog)
	if len(ids) == 0 {
		t.Errorf("the driver's log shows no task finished on an executor\n%s", tail(driverLog, 40))
	}
	for _, id := range ids {
		i := slices.IndexFunc(logs, func(l executorLog) bool { return l.id == id })
		if i < 0 {
			t.Errorf("executor %s ran tasks, but its log was not followed (followed %v)", id, pods)
		} else if l := logs[i].log.String(); !strings.Contains(l, "Running task ") {
			t.Errorf("executor %s (%s): kubectl logs shows no task run\n%s", id, logs[i].pod, tail(l, 30))
		}
	}
}

// driverAppID waits for the driver pod to exist and returns the
// application id the webhook gave it.
func driverAppID(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Labels[vocab.LabelAppID]
	if id == "" {
		t.Fatalf("driver pod %s has no %s label: not injected", name, vocab.LabelAppID)
	}
	return id
}
