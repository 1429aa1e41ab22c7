package realspark

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// TestControllerAllocatorsRefused runs, on the newest pin, drivers that
// choose the statefulset (Spark 3.3+) or deployment (4.2+) executor
// allocator, which would have a controller create the executors past the
// sidecar. Asked for in the pod's configuration, the webhook refuses the
// pod; chosen in the program's own code, the JVM's POST of the StatefulSet
// or Deployment is refused by the sidecar with its reason, the driver
// fails with that reason in its log, and nothing is created.
func TestControllerAllocatorsRefused(t *testing.T) {
	d := dists[len(dists)-1]
	for _, allocator := range []string{"statefulset", "deployment"} {
		t.Run(allocator+"/"+d.Version, func(t *testing.T) { controllerAllocatorRefused(t, d, allocator) })
	}
}

func controllerAllocatorRefused(t *testing.T, d spark.Dist, allocator string) {
	ns := namespace(t)
	key := "spark.kubernetes.allocation.pods.allocator"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "conf-allocator", Labels: map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{vocab.AnnotationSparkConf: key + " " + allocator + "\n"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark", Image: "apache/spark:" + d.Version, Args: []string{"driver", "local:///opt/job/allocator.py"}}}},
	}
	_, err := env.Client.CoreV1().Pods(ns).Create(ctx, refused, metav1.CreateOptions{})
	if want := key + "=" + allocator + ": only the direct allocator works with sparklet"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a pod whose configuration picks the %s allocator: err = %v, want a refusal saying %q", allocator, err, want)
	}

	execs := trackExecutors(t, ns)
	job := sleepy{script: "allocator.py", conf: sleepyjob.FixedConf, files: map[string]string{"allocator": allocator}}
	job.start(t, ns, d)
	done := waitPod(t, ns, sleepyDriver, "finished", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	driverLog := log(ns, sleepyDriver, "spark")
	if done.Status.Phase != corev1.PodFailed {
		t.Errorf("driver pod %s, want Failed", done.Status.Phase)
	}
	if why := "serves no StatefulSets or Deployments: use Spark's default executor allocator, " + key + "=direct"; !strings.Contains(driverLog, why) {
		t.Errorf("the driver's log does not say %q\n%s", why, driverLogTail(ns, sleepyDriver))
	}
	if strings.Contains(driverLog, "allocator: counted") {
		t.Error("the job ran")
	}
	if _, _, seen, _ := execs.Counts(); seen != 0 {
		t.Errorf("%d executor pods were created", seen)
	}
	sets, err := env.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := env.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sets.Items) + len(deps.Items); n != 0 {
		t.Errorf("%d StatefulSets and Deployments in the namespace, want none", n)
	}
}
