package realspark

import (
	"context"
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
	podresource "k8s.io/component-helpers/resource"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/test/schedulers"
)

// TestKueueSparkPi runs examples/kueue-driver.yaml with stock Spark under
// Kueue: the driver, opted into the LocalQueue spark by sparklet's
// annotations, is gated and admitted against the ClusterQueue's quota;
// each executor the sidecar creates is its own Workload, admitted into the
// same ClusterQueue before it runs; the job completes.
func TestKueueSparkPi(t *testing.T) {
	d := dists[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
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
	ns := namespace(t)
	if err := kueue.ManageNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}

	var pod corev1.Pod
	if err := yaml.Unmarshal(example(t, "kueue-driver.yaml", d), &pod); err != nil {
		t.Fatal(err)
	}

	// Room for the driver and its two executors (of at most one core and
	// 2 GiB each).
	dry, err := env.Client.CoreV1().Pods(ns).Create(ctx, &pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	quota := podresource.PodRequests(dry, podresource.PodResourcesOptions{})
	cpu, mem := quota[corev1.ResourceCPU], quota[corev1.ResourceMemory]
	cpu.Add(resource.MustParse("2"))
	mem.Add(resource.MustParse("4Gi"))
	const cq = "realspark-cq"
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
	done := waitPod(t, ns, pod.Name, "finished", 6*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	driverLog := log(ns, pod.Name, "spark")
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, pod.Name))
	}
	if pi := piValue(t, driverLog); math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
	}
	if registered := strings.Count(driverLog, "Registered executor"); registered < 2 {
		t.Errorf("%d executors registered with the driver, want 2\n%s", registered, driverLogTail(ns, pod.Name))
	}

	admitted := admissions.Admitted()
	if admitted[pod.Name] != cq {
		t.Errorf("driver's Workload admitted into %q, want %q (admitted: %v)", admitted[pod.Name], cq, admitted)
	}
	pods := execs.pods()
	if len(pods) != 2 {
		t.Errorf("%d executor pods, want exactly 2", len(pods))
	}
	for _, p := range pods {
		if p.Labels[schedulers.KueueQueueLabel] != "spark" || p.Labels[schedulers.KueueManagedLabel] != "true" {
			t.Errorf("executor %s lacks Kueue's labels: %v", p.Name, p.Labels)
		}
		if admitted[p.Name] != cq {
			t.Errorf("executor %s: Workload admitted into %q, want %q (admitted: %v)", p.Name, admitted[p.Name], cq, admitted)
		}
	}
	t.Logf("Spark %s under Kueue: admitted %v", d.Version, admitted)
	waitClean(t, ns, done.Labels["spark-app-selector"], 30*time.Second)
	_ = env.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
}
