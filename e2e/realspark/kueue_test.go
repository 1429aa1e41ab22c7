package realspark

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	podresource "k8s.io/component-helpers/resource"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/schedulers"
	"github.com/sparklet/sparklet/vocab"
)

// TestKueueSparkPi runs examples/kueue-driver.yaml (two executors) with
// stock Spark under Kueue: the driver, opted into the LocalQueue spark by
// sparklet's annotations, is gated and admitted against the ClusterQueue's
// quota; each executor the sidecar creates is its own Workload, admitted
// into the same ClusterQueue before it runs; the job completes. With room
// for one executor only, Kueue admits pods one by one: one executor runs,
// the other waits gated for the whole job, which completes on the one.
func TestKueueSparkPi(t *testing.T) {
	d := dists[0]
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kueue, err := schedulers.StartKueue(ctx, schedulers.KueueOptions{
		BinDir: os.Getenv("SPARKLET_BIN_DIR"), Dir: filepath.Join(filepath.Dir(env.Cluster.Dir()), "kueue"), Cluster: env.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kueue.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kueue log (%s):\n%s", kueue.LogFile(), kueue.LogTail(40))
		}
	})
	for _, room := range []int{2, 1} {
		t.Run(fmt.Sprintf("room-for-%d", room), func(t *testing.T) {
			kueueSparkPi(ctx, t, kueue, d, room)
		})
	}
}

// kueueSparkPi runs the Kueue example with quota for the driver and room
// executors of one core.
func kueueSparkPi(ctx context.Context, t *testing.T, kueue *schedulers.Kueue, d spark.Dist, room int) {
	ns := namespace(t)
	if err := kueue.ManageNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(example(t, "kueue-driver.yaml", d), &pod); err != nil {
		t.Fatal(err)
	}
	if room < 2 {
		// Spark waits this long for the executors it asked for before it
		// starts on fewer (30s by default).
		pod.Annotations[vocab.AnnotationSparkConf] += "\nspark.scheduler.maxRegisteredResourcesWaitingTime 5s\n"
	}
	dry, err := env.Client.CoreV1().Pods(ns).Create(ctx, &pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	quota := podresource.PodRequests(dry, podresource.PodResourcesOptions{})
	cpu, mem := quota[corev1.ResourceCPU], quota[corev1.ResourceMemory]
	cpu.Add(*resource.NewQuantity(int64(room), resource.DecimalSI))
	mem.Add(*resource.NewQuantity(int64(room)<<31, resource.BinarySI))
	cq := ns + "-cq"
	if err := kueue.CreateClusterQueue(ctx, cq, corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}); err != nil {
		t.Fatal(err)
	}
	if err := kueue.CreateLocalQueue(ctx, ns, "spark", cq); err != nil {
		t.Fatal(err)
	}
	admissions, err := kueue.TrackAdmissions(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	execs := trackExecutors(t, ns)

	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, &pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !schedulers.KueueGated(created) || created.Labels[schedulers.KueueQueueLabel] != "spark" || !slices.Contains(created.Finalizers, schedulers.KueueFinalizer) {
		t.Fatalf("driver not queued for Kueue: gates %v, labels %v, finalizers %v", created.Spec.SchedulingGates, created.Labels, created.Finalizers)
	}
	if room < 2 {
		// While the job runs: room executors run, the others wait gated
		// with their Workloads pending.
		waitExecutors(ctx, t, kueue, ns, room, 2-room)
	}
	done := waitPod(t, ns, pod.Name, "finished", 6*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	driverLog := log(ns, pod.Name, "spark")
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, pod.Name))
	}
	if pi := piValue(t, driverLog); math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
	}
	if registered := strings.Count(driverLog, "Registered executor"); registered != room {
		t.Errorf("%d executors registered with the driver, want %d\n%s", registered, room, driverLogTail(ns, pod.Name))
	}

	// No pod ran without its Workload admitted into the ClusterQueue.
	admitted := admissions.Admitted()
	if admitted[pod.Name] != cq {
		t.Errorf("driver's Workload admitted into %q, want %q (admitted: %v)", admitted[pod.Name], cq, admitted)
	}
	pods := execs.Pods()
	if len(pods) != 2 {
		t.Errorf("%d executor pods, want exactly 2", len(pods))
	}
	ran := 0
	for _, p := range pods {
		if p.Labels[schedulers.KueueQueueLabel] != "spark" || p.Labels[schedulers.KueueManagedLabel] != "true" {
			t.Errorf("executor %s lacks Kueue's labels: %v", p.Name, p.Labels)
		}
		if execs.RanEver(p.Name) {
			ran++
			if admitted[p.Name] != cq {
				t.Errorf("executor %s ran with its Workload admitted into %q, want %q", p.Name, admitted[p.Name], cq)
			}
		}
	}
	if ran != room {
		t.Errorf("%d executors ran, want %d", ran, room)
	}
	t.Logf("Spark %s under Kueue, room for %d executors: %d ran, each with its Workload admitted into %s; Pi computed", d.Version, room, ran, cq)
	waitClean(t, ns, done.Labels[vocab.LabelAppID], 30*time.Second)
	_ = env.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

// waitExecutors waits until running executors of namespace ns run and
// gated ones wait gated, their Workloads not admitted.
func waitExecutors(ctx context.Context, t *testing.T, kueue *schedulers.Kueue, ns string, running, gated int) {
	t.Helper()
	var state string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelRole + "=executor"})
		if err != nil {
			return false, nil
		}
		wls, err := kueue.Workloads(ctx, ns)
		if err != nil {
			return false, nil
		}
		admitted := map[string]bool{}
		for _, w := range wls {
			admitted[w.Pod] = w.Admitted
		}
		r, g := 0, 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && admitted[p.Name] {
				r++
			}
			if _, hasWorkload := admitted[p.Name]; schedulers.KueueGated(&p) && hasWorkload && !admitted[p.Name] {
				g++
			}
		}
		state = fmt.Sprintf("%d executors, %d running admitted, %d gated pending", len(pods.Items), r, g)
		return len(pods.Items) == running+gated && r == running && g == gated, nil
	})
	if err != nil {
		t.Fatalf("want %d executors running and %d waiting gated; %s: %v", running, gated, state, err)
	}
	t.Logf("while the job runs: %s", state)
}
