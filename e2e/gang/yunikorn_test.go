package gang

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/schedulers"
	"github.com/sparklet/sparklet/test/syncbuffer"
	"github.com/sparklet/sparklet/vocab"
)

// executors is each application's spark.executor.instances: the gang's
// executor group.
const executors = 2

// gangNode is the one node the applications run on: room for two gangs
// and a half.
const gangNode = "gang-node"

// TestYuniKornGangs runs three applications whose gangs cannot all fit
// on the cluster at once, through the webhook, the sidecar and YuniKorn:
// the first two run with all their executors, the third waits with its
// placeholders and runs once the first has finished, and no driver is
// ever bound to a node unless its executor group's placeholders hold
// their room.
func TestYuniKornGangs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "gang-yunikorn"
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		t.Fatal(err)
	}

	// The gang as the webhook computes it, from a dry run.
	dry, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	cpu, memory := gangSize(t, dry)
	t.Logf("one gang: %s cpu, %s memory", cpu.String(), memory.String())
	room := func(q resource.Quantity) resource.Quantity {
		return *resource.NewMilliQuantity(q.MilliValue()*5/2, q.Format)
	}
	useOnlyNode(ctx, t, corev1.ResourceList{corev1.ResourceCPU: room(cpu), corev1.ResourceMemory: room(memory), corev1.ResourcePods: resource.MustParse("110")})

	watch, err := schedulers.WatchGangs(ctx, env.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	yk, err := schedulers.StartYuniKorn(ctx, env.Cluster, os.Getenv("SPARKLET_BIN_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("yunikorn-scheduler log (%s):\n%s", yk.LogFile(), yk.LogTail(40))
		}
		yk.Stop()
	})

	// Submitted in order, each once YuniKorn has made its placeholders:
	// the queue is FIFO.
	apps := make([]*app, 3)
	for i := range apps {
		apps[i] = submit(ctx, t, ns, fmt.Sprintf("spark-%d", i+1))
		apps[i].waitPlaceholders(ctx, watch)
	}

	for _, a := range apps[:2] {
		a.waitDriverRunning(ctx)
		a.runExecutors(ctx)
	}
	first, second, third := apps[0], apps[1], apps[2]
	requireWithinNode(t, watch)

	// The third waits: its driver and its placeholders are not all bound.
	third.requireWaiting(ctx)

	// The first ends; its executors go first, and that frees the room.
	ending := time.Now()
	first.finish(ctx)
	third.waitDriverRunning(ctx)
	third.runExecutors(ctx)
	requireWithinNode(t, watch)
	if b, _ := watch.BoundAt(third.name); b.At.Before(ending) {
		t.Errorf("driver %s was bound at %s, before %s began to end at %s", third.name, b.At.Format(time.StampMilli), first.name, ending.Format(time.StampMilli))
	}
	second.requireExecutorsRunning(ctx)

	events, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ExecutorLargerThanGang"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		t.Errorf("the sidecar warned %s: %s", e.InvolvedObject.Name, e.Message)
	}
	for _, a := range apps {
		b, ok := watch.BoundAt(a.name)
		switch {
		case !ok:
			t.Errorf("driver %s: the watch never saw it bound", a.name)
		case len(b.Problems) > 0:
			t.Errorf("driver %s: %s", a.name, strings.Join(b.Problems, "; "))
		case b.Holding < b.Minimum:
			t.Errorf("driver %s was bound to %s while %d of its %d executor placeholders held a node", a.name, b.Node, b.Holding, b.Minimum)
		default:
			t.Logf("driver %s bound to %s with %d of %d executor placeholders holding their room", a.name, b.Node, b.Holding, b.Minimum)
		}
	}
}

// driverPod is a plain driver pod that opts in to YuniKorn with the
// queue the scheduler's configuration has.
func driverPod(name string) *corev1.Pod {
	mem := resource.MustParse("1Gi")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{
				"sparklet.io/batch-scheduler":     "yunikorn",
				"sparklet.io/queue":               schedulers.YuniKornQueue,
				"sparklet.io/placeholder-timeout": "10m",
				vocab.AnnotationSparkConf:         fmt.Sprintf("spark.executor.instances %d\n", executors),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:  "spark",
				Image: "apache/spark:3.5.4",
				Args:  []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples_2.12-3.5.4.jar"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
				},
			}},
		},
	}
}

// gangSize is the room a driver's gang takes: each task group's minimum
// resources times its members. The executor group must be the size the
// emulator's executors ask for, or YuniKorn would not let them take the
// placeholders' places.
func gangSize(t *testing.T, driver *corev1.Pod) (cpu, memory resource.Quantity) {
	t.Helper()
	groups, err := schedulers.TaskGroups(driver)
	if err != nil {
		t.Fatalf("the webhook's task groups: %v", err)
	}
	var seen []string
	for _, g := range groups {
		seen = append(seen, g.Name)
		for i := int32(0); i < g.MinMember; i++ {
			cpu.Add(g.MinResource[corev1.ResourceCPU])
			memory.Add(g.MinResource[corev1.ResourceMemory])
		}
		if g.Name == schedulers.GroupExecutor {
			c, m := g.MinResource[corev1.ResourceCPU], g.MinResource[corev1.ResourceMemory]
			if g.MinMember != executors || c.Cmp(resource.MustParse("1")) != 0 || m.Cmp(resource.MustParse("1408Mi")) != 0 {
				t.Fatalf("executor task group %+v: want %d members of 1 cpu and 1408Mi (spark.executor.memory 1g plus 384Mi overhead)", g, executors)
			}
		}
	}
	if len(seen) != 2 || seen[0] != schedulers.GroupDriver || seen[1] != schedulers.GroupExecutor {
		t.Fatalf("task groups %v, want [%s %s]", seen, schedulers.GroupDriver, schedulers.GroupExecutor)
	}
	return cpu, memory
}

// useOnlyNode cordons the cluster's own nodes and adds gangNode, a kwok
// node with the given allocatable resources, for the applications.
func useOnlyNode(ctx context.Context, t *testing.T, allocatable corev1.ResourceList) {
	t.Helper()
	for _, name := range cluster.Nodes {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if _, err := env.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("cordon %s: %v", name, err)
		}
	}
	if _, err := env.Client.CoreV1().Nodes().Create(ctx, cluster.KwokNode(gangNode, allocatable), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "node "+gangNode+" Ready and untainted", time.Minute, func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, gangNode, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return len(n.Spec.Taints) == 0, nil
			}
		}
		return false, nil
	})
}

// requireWithinNode checks that the pods bound to gangNode ask for no
// more than it has.
func requireWithinNode(t *testing.T, w *schedulers.GangWatch) {
	t.Helper()
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), gangNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu, memory, pods := w.NodeUse(gangNode)
	if cpu.Cmp(n.Status.Allocatable[corev1.ResourceCPU]) > 0 || memory.Cmp(n.Status.Allocatable[corev1.ResourceMemory]) > 0 {
		t.Errorf("pods on %s ask for %s cpu and %s memory, more than its %s and %s: %v", gangNode,
			cpu.String(), memory.String(), n.Status.Allocatable.Cpu(), n.Status.Allocatable.Memory(), pods)
	}
}

func poll(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// app is one Spark application: its driver pod, and once that runs, its
// sidecar run locally and the driver emulator in place of the JVM.
type app struct {
	t     *testing.T
	ns    string
	name  string
	appID string
	sc    *testenv.Sidecar
	jvm   *emulator.Driver
	stop  context.CancelFunc
	logs  syncbuffer.Buffer // the emulator's
}

// submit creates a driver pod through the webhook, which sets it up for
// YuniKorn.
func submit(ctx context.Context, t *testing.T, ns, name string) *app {
	t.Helper()
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.SchedulerName != schedulers.YuniKornName || created.Annotations[schedulers.AnnotationTaskGroups] == "" ||
		created.Labels[schedulers.LabelAppID] != created.Labels[vocab.LabelAppID] || created.Labels[schedulers.LabelQueue] != schedulers.YuniKornQueue {
		t.Fatalf("driver %s is not set up for YuniKorn: schedulerName %q, labels %v, task groups %q", name,
			created.Spec.SchedulerName, created.Labels, created.Annotations[schedulers.AnnotationTaskGroups])
	}
	a := &app{t: t, ns: ns, name: name, appID: schedulers.AppOf(created)}
	t.Cleanup(a.cleanUp)
	return a
}

// pods lists the application's pods: driver, placeholders, executors.
func (a *app) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := env.Client.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if schedulers.AppOf(&p) == a.appID {
			out = append(out, p)
		}
	}
	return out, nil
}

func (a *app) placeholders(ctx context.Context) (all, bound int, err error) {
	pods, err := a.pods(ctx)
	for i := range pods {
		if schedulers.IsPlaceholder(&pods[i]) && pods[i].DeletionTimestamp == nil {
			all++
			if pods[i].Spec.NodeName != "" {
				bound++
			}
		}
	}
	return all, bound, err
}

// waitPlaceholders waits until YuniKorn has created the gang's
// placeholders: one for the driver and one per executor.
func (a *app) waitPlaceholders(ctx context.Context, w *schedulers.GangWatch) {
	a.t.Helper()
	poll(ctx, a.t, a.name+"'s placeholders", 2*time.Minute, func(context.Context) (bool, error) {
		return w.PlaceholdersSeen(a.appID) == 1+executors, nil
	})
}

func (a *app) driver(ctx context.Context) (*corev1.Pod, error) {
	return env.Client.CoreV1().Pods(a.ns).Get(ctx, a.name, metav1.GetOptions{})
}

// waitDriverRunning waits until YuniKorn has bound the driver in its
// placeholder's place and kwok reports it Running.
func (a *app) waitDriverRunning(ctx context.Context) {
	a.t.Helper()
	poll(ctx, a.t, "driver "+a.name+" Running", 3*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := a.driver(ctx)
		return err == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning, nil
	})
}

// runExecutors runs the sidecar and the emulated JVM, which asks for the
// gang's executors; they take the executor placeholders' places.
func (a *app) runExecutors(ctx context.Context) {
	a.t.Helper()
	pod, err := a.driver(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	a.sc = env.StartSidecar(ctx, a.t, pod)
	cfg, err := a.sc.EmulatorConfig(emulator.Spark40)
	if err != nil {
		a.t.Fatal(err)
	}
	cfg.PollInterval, cfg.DeleteGracePeriod = 2*time.Second, 100*time.Millisecond
	cfg.Log = emulator.JSONLog(&a.logs)
	if a.jvm, err = emulator.New(cfg); err != nil {
		a.t.Fatal(err)
	}
	var runCtx context.Context
	runCtx, a.stop = context.WithCancel(context.WithoutCancel(ctx))
	if err := a.jvm.Start(runCtx); err != nil {
		a.t.Fatal(err)
	}
	a.jvm.SetTarget(executors)
	a.requireExecutorsRunning(ctx)
}

// requireExecutorsRunning waits until the application's executors run,
// scheduled by YuniKorn in the executor group, and no placeholder is left.
func (a *app) requireExecutorsRunning(ctx context.Context) {
	a.t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := a.jvm.WaitRunning(wctx, executors); err != nil {
		a.t.Fatalf("%s: %v", a.name, err)
	}
	poll(ctx, a.t, a.name+"'s placeholders replaced", time.Minute, func(ctx context.Context) (bool, error) {
		all, _, err := a.placeholders(ctx)
		return err == nil && all == 0, nil
	})
	pods, err := a.pods(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	running := 0
	for _, p := range pods {
		if p.Labels[vocab.LabelRole] != "executor" {
			continue
		}
		// What the sidecar stamps, and where YuniKorn put it.
		if p.Spec.SchedulerName != schedulers.YuniKornName || p.Labels[schedulers.LabelAppID] != a.appID || p.Labels[schedulers.LabelQueue] != schedulers.YuniKornQueue ||
			p.Annotations[schedulers.AnnotationTaskGroup] != schedulers.GroupExecutor || p.Spec.NodeName != gangNode {
			a.t.Errorf("executor %s: schedulerName %q, labels %v, task group %q, node %q", p.Name, p.Spec.SchedulerName, p.Labels, p.Annotations[schedulers.AnnotationTaskGroup], p.Spec.NodeName)
		}
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running != executors {
		a.t.Fatalf("%s: %d executors Running, want %d", a.name, running, executors)
	}
}

// requireWaiting checks that the application waits for room: YuniKorn
// made its placeholders, but its driver is not bound and its placeholders
// are not all bound.
func (a *app) requireWaiting(ctx context.Context) {
	a.t.Helper()
	p, err := a.driver(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	all, bound, err := a.placeholders(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		a.t.Fatalf("driver %s is %s on %q while the cluster has no room for its gang", a.name, p.Status.Phase, p.Spec.NodeName)
	}
	if all != 1+executors || bound == all {
		a.t.Fatalf("%s: %d placeholders, %d bound; want %d, not all bound", a.name, all, bound, 1+executors)
	}
	a.t.Logf("%s waits: driver Pending, %d of its %d placeholders bound", a.name, bound, all)
}

// finish ends the application as Spark does: the JVM stops (deleting its
// executors through the sidecar), the driver container exits and the
// sidecar with it, and the pod is Succeeded.
func (a *app) finish(ctx context.Context) {
	a.t.Helper()
	if err := a.jvm.Stop(ctx); err != nil {
		a.t.Fatalf("%s: stop the JVM: %v", a.name, err)
	}
	a.stop()
	a.sc.Signal(syscall.SIGTERM)
	select {
	case <-a.sc.Exited():
	case <-ctx.Done():
		a.t.Fatalf("%s: the sidecar did not exit", a.name)
	}
	pod, err := a.driver(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodSucceeded
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].Ready = false
		pod.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	}
	if _, err := env.Client.CoreV1().Pods(a.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		a.t.Fatalf("%s: mark the driver Succeeded: %v", a.name, err)
	}
	poll(ctx, a.t, a.name+"'s executors gone", time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := a.pods(ctx)
		if err != nil {
			return false, nil
		}
		for _, p := range pods {
			if p.Labels[vocab.LabelRole] == "executor" {
				return false, nil
			}
		}
		return true, nil
	})
}

func (a *app) cleanUp() {
	if a.stop != nil {
		a.stop()
	}
	if a.t.Failed() {
		lines := strings.Split(strings.TrimRight(a.logs.String(), "\n"), "\n")
		a.t.Logf("%s emulator log:\n%s", a.name, strings.Join(lines[max(0, len(lines)-20):], "\n"))
	}
	err := env.Client.CoreV1().Pods(a.ns).Delete(context.Background(), a.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		a.t.Logf("delete %s: %v", a.name, err)
	}
}
