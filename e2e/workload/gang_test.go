package workload

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/vocab"
)

// TestAGangHoldsTheDriverUntilItsExecutorsExist shows why Kubernetes'
// gang scheduling cannot gang a Spark driver with its executors: a
// PodGroup of the driver and two executors (minCount 3) keeps the driver
// unscheduled until the other two pods exist, and reserves nothing for
// them. Spark's executors are created by the running driver, so with
// sparklet they never would be. The kube-scheduler is the real one
// (v1.37.2, GangScheduling plugin).
func TestAGangHoldsTheDriverUntilItsExecutorsExist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := "gang"
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		t.Fatal(err)
	}
	group := `apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: app}
spec:
  schedulingPolicy:
    gang: {minCount: 3}
`
	if out, stderr, err := env.Kubectl(ctx, []byte(group), "create", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("create the PodGroup: %v\n%s%s", err, out, stderr)
	}
	driver := `apiVersion: v1
kind: Pod
metadata: {name: driver, labels: {spark-role: driver}}
spec:
  schedulingGroup: {podGroupName: app}
  containers: [{name: spark, image: apache/spark:3.5.4, args: [driver, local:///opt/app/app.jar]}]
`
	if out, stderr, err := env.Kubectl(ctx, []byte(driver), "create", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("create the driver: %v\n%s%s", err, out, stderr)
	}
	pods := env.Client.CoreV1().Pods(ns)
	stored, err := pods.Get(ctx, "driver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Annotations[vocab.AnnotationStatus]; !ok {
		t.Fatal("the driver was not injected")
	}
	if g := stored.Spec.SchedulingGroup; g == nil || g.PodGroupName == nil || *g.PodGroupName != "app" {
		t.Fatalf("the driver lost spec.schedulingGroup: %+v", g)
	}

	// A pod created after the driver, outside the group, is scheduled:
	// the scheduler has run past the driver and kept it back.
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := pods.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(ctx, t, ns, "probe")
	if p, err := pods.Get(ctx, "driver", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("the driver was scheduled with its gang incomplete (node %q, err %v)", p.Spec.NodeName, err)
	}

	// Only once two more members exist does the whole gang go.
	for i := 1; i <= 2; i++ {
		member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("executor-%d", i)}, Spec: corev1.PodSpec{
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr("app")},
			Containers:      []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		if _, err := pods.Create(ctx, member, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"driver", "executor-1", "executor-2"} {
		waitBound(ctx, t, ns, name)
	}
}

func waitBound(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s was not scheduled: %v\n%s", ns, name, err, env.Cluster.LogTail("kube-scheduler", 20))
	}
}

func ptr[T any](v T) *T { return &v }
