package realspark

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresource "k8s.io/component-helpers/resource"

	"github.com/sparklet/sparklet/patches"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/schedulers"
	"github.com/sparklet/sparklet/vocab"
)

// TestYuniKornGang applies examples/spark-pi-pod.yaml opted in to YuniKorn,
// with the first pinned Spark version, on the pod runner's node while a
// pod of kube-scheduler's leaves room for half the gang: YuniKorn holds what
// fits with placeholders (the pause image, played by a sleeping process)
// and the driver waits; once that pod is deleted the stock driver is bound,
// only while the executor placeholders hold the node, the executors the JVM
// asks the sidecar for are YuniKorn's, in the executor group, and SparkPi
// computes Pi.
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
	// A pod of kube-scheduler's takes the node's room but half a gang's:
	// the driver must wait for it to go.
	var dry corev1.Pod
	if err := json.Unmarshal([]byte(kubectl(t, []byte(pod), "apply", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")), &dry); err != nil {
		t.Fatal(err)
	}
	blocker := occupyRunner(ctx, t, ns, gangCPU(t, &dry))

	kubectl(t, []byte(pod), "apply", "-n", ns, "-f", "-")
	defer func() {
		_ = env.Client.CoreV1().Pods(ns).Delete(context.Background(), "spark-pi", metav1.DeleteOptions{})
	}()
	// YuniKorn holds what fits of the gang, one placeholder, and no more.
	app := ""
	waitPod(t, ns, "spark-pi", "known to YuniKorn with its placeholders", 2*time.Minute, func(p *corev1.Pod) bool {
		app = schedulers.AppOf(p)
		return watch.PlaceholdersSeen(app) == 3 && watch.PlaceholdersHolding(app) == 1
	})
	if p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "spark-pi", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("driver bound to %q (%v) while the node has room for half its gang", p.Spec.NodeName, err)
	}
	freed := time.Now()
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, blocker, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	running := waitPod(t, ns, "spark-pi", "ran its driver container", 5*time.Minute, containerRunning("spark"))
	if running.Spec.SchedulerName != schedulers.YuniKornName || running.Spec.NodeName != testenv.RunnerNode {
		t.Fatalf("driver: schedulerName %q on %q, want %s on %s", running.Spec.SchedulerName, running.Spec.NodeName, schedulers.YuniKornName, testenv.RunnerNode)
	}
	done := waitPod(t, ns, "spark-pi", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, "spark-pi"))
	}
	if pi := piValue(t, log(ns, "spark-pi", "spark")); math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
	}

	b, ok := watch.BoundAt("spark-pi")
	switch {
	case ok && b.At.Before(freed):
		t.Errorf("driver bound at %s, before the blocking pod was deleted at %s", b.At.Format(time.StampMilli), freed.Format(time.StampMilli))
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
	pods := execs.Pods()
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
	// The gang's executor size is what the real JVM asks for: Spark's own
	// arithmetic, read by the webhook at admission.
	sched, ok, err := patches.SchedulingOf(running)
	if err != nil || !ok {
		t.Fatalf("the driver's scheduling annotation: %v (found %v)", err, ok)
	}
	for _, p := range pods {
		got := podresource.PodRequests(p, podresource.PodResourcesOptions{})
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if g, w := got[r], sched.Executor[r]; g.Cmp(w) != 0 {
				t.Errorf("executor %s asks for %s %s, the gang's executor size is %s", p.Name, r, g.String(), w.String())
			}
		}
	}
	if _, ok := execs.NthRunning(2); !ok {
		t.Error("never saw 2 executors Running")
	}
	events, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ExecutorLargerThanGang"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		t.Errorf("the sidecar warned %s: %s", e.InvolvedObject.Name, e.Message)
	}
	waitClean(t, ns, running.Labels[vocab.LabelAppID], time.Minute)
	t.Logf("Spark %s: driver waited with 1 of 3 placeholders bound, was bound to %s %v after the room was freed with %d of %d executor placeholders holding it; 2 executors of the executor group; Pi computed",
		d.Version, b.Node, b.At.Sub(freed).Round(time.Millisecond), b.Holding, b.Minimum)
}

// gangCPU is the cpu a driver's gang takes: its task groups' minimum cpu
// times their members.
func gangCPU(t *testing.T, driver *corev1.Pod) resource.Quantity {
	t.Helper()
	groups, err := schedulers.TaskGroups(driver)
	if err != nil {
		t.Fatal(err)
	}
	var cpu resource.Quantity
	for _, g := range groups {
		for range g.MinMember {
			cpu.Add(g.MinResource[corev1.ResourceCPU])
		}
	}
	return cpu
}

// occupyRunner runs a pause pod, bound by kube-scheduler, that leaves the
// pod runner's node room for half of gang, and returns its name.
func occupyRunner(ctx context.Context, t *testing.T, ns string, gang resource.Quantity) string {
	t.Helper()
	node, err := env.Client.CoreV1().Nodes().Get(ctx, testenv.RunnerNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + testenv.RunnerNode})
	if err != nil {
		t.Fatal(err)
	}
	free := node.Status.Allocatable.Cpu().MilliValue()
	for i := range pods.Items {
		if schedulers.Holds(&pods.Items[i]) {
			r := podresource.PodRequests(&pods.Items[i], podresource.PodResourcesOptions{})
			free -= r.Cpu().MilliValue()
		}
	}
	take := free - gang.MilliValue()/2
	if take <= 0 {
		t.Fatalf("%s has %dm cpu free, less than half a gang (%s)", testenv.RunnerNode, free, gang.String())
	}
	blocker := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blocker"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.7",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(take, resource.DecimalSI)}}}}},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, blocker.Name, "Running", 2*time.Minute, phaseIs(corev1.PodRunning))
	return blocker.Name
}
