package realspark

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/schedulers"
)

// TestYuniKornGang applies examples/spark-pi-pod.yaml opted in to YuniKorn,
// with the first pinned Spark version, on the pod runner's node: YuniKorn
// holds the gang's room with placeholders (the pause image, played by a
// sleeping process), the stock driver is bound only while the executor
// placeholders hold the node, the executors the JVM asks the sidecar for
// are YuniKorn's, in the executor group, and SparkPi computes Pi.
func TestYuniKornGang(t *testing.T) {
	d := dists[0]
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	watch, err := schedulers.WatchGangs(ctx, env.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	execs := trackExecutors(t, ns)
	yk, err := schedulers.StartYuniKorn(ctx, env.Cluster, os.Getenv("SPARKLET_BIN_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("yunikorn-scheduler log (%s):\n%s", yk.LogFile(), yk.LogTail(40))
		}
		yk.Stop()
	}()

	pod := strings.Replace(string(example(t, "spark-pi-pod.yaml", d)), "  annotations:\n",
		"  annotations:\n"+
			"    sparklet.io/batch-scheduler: yunikorn\n"+
			"    sparklet.io/queue: "+schedulers.YuniKornQueue+"\n"+
			"    sparklet.io/placeholder-timeout: 10m\n", 1)
	kubectl(t, []byte(pod), "apply", "-n", ns, "-f", "-")
	defer func() {
		_ = env.Client.CoreV1().Pods(ns).Delete(context.Background(), "spark-pi", metav1.DeleteOptions{})
	}()

	running := waitPod(t, ns, "spark-pi", "ran its driver container", 5*time.Minute, containerRunning("spark"))
	if running.Spec.SchedulerName != schedulers.YuniKornName || running.Spec.NodeName != testenv.RunnerNode {
		t.Fatalf("driver: schedulerName %q on %q, want %s on %s", running.Spec.SchedulerName, running.Spec.NodeName, schedulers.YuniKornName, testenv.RunnerNode)
	}
	app := schedulers.AppOf(running)
	done := waitPod(t, ns, "spark-pi", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, "spark-pi"))
	}
	if pi := piValue(t, log(ns, "spark-pi", "spark")); math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
	}

	b, ok := watch.BoundAt("spark-pi")
	switch {
	case !ok:
		t.Error("the watch never saw the driver bound")
	case len(b.Problems) > 0:
		t.Errorf("driver: %s", strings.Join(b.Problems, "; "))
	case b.Minimum != 2 || b.Holding < b.Minimum:
		t.Errorf("driver bound to %s while %d executor placeholders held a node, want its %d (the example's executors)", b.Node, b.Holding, b.Minimum)
	}
	if n := watch.PlaceholdersSeen(app); n != 3 {
		t.Errorf("%d placeholders, want 3: the driver's and two executors'", n)
	}
	pods := execs.pods()
	if len(pods) != 2 {
		t.Errorf("%d executor pods, want 2", len(pods))
	}
	for _, p := range pods {
		if p.Spec.SchedulerName != schedulers.YuniKornName || schedulers.AppOf(p) != app ||
			p.Annotations[schedulers.AnnotationTaskGroup] != schedulers.GroupExecutor || p.Spec.NodeName != testenv.RunnerNode {
			t.Errorf("executor %s: schedulerName %q, application %q, task group %q, node %q; want %s, %s, %s, %s", p.Name,
				p.Spec.SchedulerName, schedulers.AppOf(p), p.Annotations[schedulers.AnnotationTaskGroup], p.Spec.NodeName,
				schedulers.YuniKornName, app, schedulers.GroupExecutor, testenv.RunnerNode)
		}
	}
	if _, ok := execs.nthRunning(2); !ok {
		t.Error("never saw 2 executors Running")
	}
	events, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ExecutorLargerThanGang"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		t.Errorf("the sidecar warned %s: %s", e.InvolvedObject.Name, e.Message)
	}
	waitClean(t, ns, running.Labels[patches.LabelAppID], time.Minute)
	t.Logf("Spark %s: driver bound to %s with %d of %d executor placeholders holding their room; 2 executors of the executor group; Pi computed",
		d.Version, b.Node, b.Holding, b.Minimum)
}
