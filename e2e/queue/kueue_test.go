package queue

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	podresource "k8s.io/component-helpers/resource"

	"github.com/sparklet/sparklet/test/emulator"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/schedulers"
	"github.com/sparklet/sparklet/test/syncbuffer"
	"github.com/sparklet/sparklet/vocab"
)

// The namespace, LocalQueue and ClusterQueue of the Kueue test.
const (
	kueueNS    = "kueue-apps"
	localQueue = "spark"
	clusterQ   = "spark-cq"
)

// testPolicy is sparklet's policy for this package: the driver service
// account the namespaces get. Nothing of Kueue's is in it: the webhook and
// the sidecar write Kueue's fields from the driver's annotations.
const testPolicy = `driver:
  defaults:
    serviceAccountName: spark-driver
`

// kueueDriver is examples/kueue-driver.yaml, named name: a driver that
// asks for Kueue's LocalQueue spark through sparklet's annotations alone.
func kueueDriver(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod := fixtures.LoadPod(t, "../../examples/kueue-driver.yaml")
	pod.Name = name
	if pod.Annotations[vocab.AnnotationBatchScheduler] != "kueue" || pod.Annotations[vocab.AnnotationQueue] != localQueue {
		t.Fatalf("examples/kueue-driver.yaml asks for %q, queue %q; the test wants kueue, %q",
			pod.Annotations[vocab.AnnotationBatchScheduler], pod.Annotations[vocab.AnnotationQueue], localQueue)
	}
	if _, ok := pod.Labels[schedulers.KueueQueueLabel]; ok {
		t.Fatalf("examples/kueue-driver.yaml carries Kueue's label itself; the test wants sparklet to write it")
	}
	return pod
}

// A Kueue ClusterQueue whose quota holds one application (a driver and two
// executors) admits the driver and then each executor as its own Workload,
// counted in the ClusterQueue's usage; a third executor waits gated until
// dynamic allocation releases one, and a second application's driver waits
// gated until the first application ends.
func TestKueueAdmitsDriverAndExecutorsAgainstQuota(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kueue log (%s):\n%s", kueue.LogFile(), kueue.LogTail(40))
		}
	})
	if err := env.CreateNamespace(ctx, kueueNS, true); err != nil {
		t.Fatal(err)
	}
	if err := kueue.ManageNamespace(ctx, kueueNS); err != nil {
		t.Fatal(err)
	}

	// The quota: the injected driver's requests (sparklet's containers
	// included, as Kueue counts them) plus two executors of one core.
	dry, err := env.Client.CoreV1().Pods(kueueNS).Create(ctx, kueueDriver(t, "dry-run"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	driverCPU := podresource.PodRequests(dry, podresource.PodResourcesOptions{})[corev1.ResourceCPU]
	quota := driverCPU.DeepCopy()
	quota.Add(resource.MustParse("2"))
	t.Logf("driver requests %s CPU; ClusterQueue quota %s CPU", driverCPU.String(), quota.String())
	if err := kueue.CreateClusterQueue(ctx, clusterQ, corev1.ResourceList{corev1.ResourceCPU: quota, corev1.ResourceMemory: resource.MustParse("64Gi")}); err != nil {
		t.Fatal(err)
	}
	if err := kueue.CreateLocalQueue(ctx, kueueNS, localQueue, clusterQ); err != nil {
		t.Fatal(err)
	}

	// The first application's driver: gated by Kueue's webhook after
	// sparklet's injected it, then admitted and started.
	first := createGatedDriver(ctx, t, "app-1")
	first = waitRunning(ctx, t, first.Name)
	requireAdmitted(ctx, t, first.Name)

	sc := env.StartSidecar(ctx, t, first)
	cfg, err := sc.EmulatorConfig(emulator.Spark40)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PollInterval, cfg.DeleteGracePeriod = 2*time.Second, 100*time.Millisecond
	jvmLog := &syncbuffer.Buffer{}
	cfg.Log = emulator.JSONLog(jvmLog)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator log:\n%s", tail(jvmLog.String(), 30))
		}
	})
	jvm, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	jvmCtx, stopJVM := context.WithCancel(ctx)
	defer stopJVM()
	if err := jvm.Start(jvmCtx); err != nil {
		t.Fatal(err)
	}
	// Three executors asked for, room for two: two are admitted and run,
	// the third waits gated.
	jvm.SetTarget(3)
	if err := jvm.WaitRunning(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var waiting string
	var seen, gated, running int
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		execs, err := executors(ctx, first)
		if err != nil {
			return false, err
		}
		seen, gated, running = len(execs), 0, 0
		for _, p := range execs {
			if schedulers.KueueGated(&p) {
				gated, waiting = gated+1, p.Name
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return seen == 3 && gated == 1, nil
	})
	if err != nil {
		t.Fatalf("want 3 executors of which 1 gated, got %d of which %d gated and %d running: %v", seen, gated, running, err)
	}
	execs, err := executors(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range execs {
		if p.Labels[schedulers.KueueQueueLabel] != localQueue || p.Labels[schedulers.KueueManagedLabel] != "true" {
			t.Errorf("executor %s lacks Kueue's labels: %v", p.Name, p.Labels)
		}
	}
	// Each pod is its own Workload; the ClusterQueue counts the driver and
	// the two running executors, and has the third pending.
	var wantAdmitted []string
	for _, p := range append([]corev1.Pod{*first}, execs...) {
		if p.Name != waiting {
			wantAdmitted = append(wantAdmitted, p.Name)
		}
	}
	requireQueue(ctx, t, wantAdmitted, []string{waiting}, 3, 1)

	// Dynamic allocation releases a running executor: its quota goes to
	// the waiting one.
	var released corev1.Pod
	for _, p := range execs {
		if p.Name != waiting {
			released = p
		}
	}
	id, err := strconv.Atoi(released.Labels["spark-exec-id"])
	if err != nil {
		t.Fatalf("executor %s: spark-exec-id %q", released.Name, released.Labels["spark-exec-id"])
	}
	if err := jvm.KillExecutors(ctx, []int{id}); err != nil {
		t.Fatal(err)
	}
	wantAdmitted = slices.DeleteFunc(append(wantAdmitted, waiting), func(name string) bool { return name == released.Name })
	requireQueue(ctx, t, wantAdmitted, nil, 3, 0)
	if err := jvm.WaitRunning(ctx, 2); err != nil {
		t.Fatal(err)
	}

	// A second application's driver waits: no quota is left.
	second := createGatedDriver(ctx, t, "app-2")
	requireQueue(ctx, t, wantAdmitted, []string{second.Name}, 3, 1)
	if p, err := env.Client.CoreV1().Pods(kueueNS).Get(ctx, second.Name, metav1.GetOptions{}); err != nil || !schedulers.KueueGated(p) || p.Spec.NodeName != "" {
		t.Fatalf("the second driver should wait gated and unscheduled (err %v)", err)
	}

	// The first application ends: the JVM stops (deleting its executors)
	// and the driver pod goes. The second driver is admitted and runs.
	stopJVM()
	if err := jvm.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sc.Signal(syscall.SIGTERM)
	if err := env.Client.CoreV1().Pods(kueueNS).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(ctx, t, second.Name)
	requireQueue(ctx, t, []string{second.Name}, nil, 1, 0)
}

// createGatedDriver creates a driver through the admission chain and
// checks that sparklet's webhook put it in the LocalQueue and that
// Kueue's webhook, called again after sparklet's, took it (its finalizer).
func createGatedDriver(ctx context.Context, t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := env.Client.CoreV1().Pods(kueueNS).Create(ctx, kueueDriver(t, name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pod.Annotations[vocab.AnnotationStatus]; !ok {
		t.Fatalf("driver %s was not injected by sparklet", name)
	}
	if pod.Labels[schedulers.KueueQueueLabel] != localQueue {
		t.Fatalf("driver %s: label %s = %q, want %q", name, schedulers.KueueQueueLabel, pod.Labels[schedulers.KueueQueueLabel], localQueue)
	}
	if !schedulers.KueueGated(pod) || pod.Labels[schedulers.KueueManagedLabel] != "true" || !slices.Contains(pod.Finalizers, schedulers.KueueFinalizer) {
		t.Fatalf("driver %s was not taken by Kueue's webhook: gates %v, labels %v, finalizers %v", name, pod.Spec.SchedulingGates, pod.Labels, pod.Finalizers)
	}
	return pod
}

// waitRunning waits until Kueue lifted the driver's gate, the scheduler
// bound it and kwok runs it.
func waitRunning(ctx context.Context, t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(kueueNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("driver %s not running (gates %v, phase %s): %v", name, pod.Spec.SchedulingGates, pod.Status.Phase, err)
	}
	return pod
}

// requireAdmitted checks that pod name's Workload is admitted into the
// ClusterQueue.
func requireAdmitted(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	wls, err := kueue.Workloads(ctx, kueueNS)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wls {
		if w.Pod == name {
			if !w.Admitted || w.ClusterQueue != clusterQ || w.Queue != localQueue {
				t.Fatalf("Workload %s of %s: admitted %v into %q from %q", w.Name, name, w.Admitted, w.ClusterQueue, w.Queue)
			}
			return
		}
	}
	t.Fatalf("no Workload for %s", name)
}

// executors lists the application's executor pods.
func executors(ctx context.Context, driver *corev1.Pod) ([]corev1.Pod, error) {
	list, err := env.Client.CoreV1().Pods(kueueNS).List(ctx, metav1.ListOptions{
		LabelSelector: vocab.LabelAppID + "=" + driver.Labels[vocab.LabelAppID] + ",spark-role=executor"})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// requireQueue waits until the pods admitted are exactly admitted, each
// with its own Workload in the ClusterQueue, the pods pending have
// Workloads not admitted, and the ClusterQueue's status counts them
// (nAdmitted, nPending) with a usage equal to the sum of the admitted
// pods' requests.
func requireQueue(ctx context.Context, t *testing.T, admitted, pending []string, nAdmitted, nPending int64) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		state, ok, err := queueState(ctx, admitted, pending, nAdmitted, nPending)
		last = state
		return ok, err
	})
	if err != nil {
		t.Fatalf("queue: %v\n%s", err, last)
	}
	t.Logf("queue: %s", last)
}

// queueState reads the Workloads and the ClusterQueue and says whether
// they are as requireQueue wants, and what they are.
func queueState(ctx context.Context, admitted, pending []string, nAdmitted, nPending int64) (string, bool, error) {
	wls, err := kueue.Workloads(ctx, kueueNS)
	if err != nil {
		return "", false, err
	}
	byPod := map[string]schedulers.KueueWorkload{}
	var gotAdmitted []string
	for _, w := range wls {
		byPod[w.Pod] = w
		if w.Admitted {
			gotAdmitted = append(gotAdmitted, w.Pod)
		}
	}
	used, a, p, err := kueue.ClusterQueueUsage(ctx, clusterQ)
	if err != nil {
		return "", false, err
	}
	sort.Strings(gotAdmitted)
	want := append([]string(nil), admitted...)
	sort.Strings(want)
	state := fmt.Sprintf("admitted %v, ClusterQueue usage cpu=%s memory=%s, %d admitted, %d pending", gotAdmitted, used.Cpu(), used.Memory(), a, p)
	if strings.Join(gotAdmitted, ",") != strings.Join(want, ",") || a != nAdmitted || p != nPending {
		return state, false, nil
	}
	for _, name := range pending {
		if w, ok := byPod[name]; !ok || w.Admitted {
			return state, false, nil
		}
	}
	// The usage is the admitted pods' requests, as Kueue computes a pod's.
	sum := corev1.ResourceList{}
	for _, name := range admitted {
		pod, err := env.Client.CoreV1().Pods(kueueNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return state, false, err
		}
		for r, q := range podresource.PodRequests(pod, podresource.PodResourcesOptions{}) {
			s := sum[r]
			s.Add(q)
			sum[r] = s
		}
		if w := byPod[name]; w.ClusterQueue != clusterQ || w.Queue != localQueue {
			return state, false, fmt.Errorf("Workload %s of %s: in %q from %q", w.Name, name, w.ClusterQueue, w.Queue)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if u, s := used[r], sum[r]; u.Cmp(s) != 0 {
			return state + fmt.Sprintf("; %s used %s, admitted pods request %s", r, u.String(), s.String()), false, nil
		}
	}
	return state, true, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
