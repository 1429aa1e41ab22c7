package realspark

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/vocab"
)

// TestAlternateKeysSizeExecutors runs SparkPi sized by the older keys Spark
// still reads in place of the current ones (spark.yarn.executor.memoryOverhead
// for spark.executor.memoryOverhead, spark.unsafe.offHeap for
// spark.memory.offHeap.enabled), in a namespace whose policy caps executors
// at 1Gi (testdata/policy.yaml). What admission lets through, the JVM
// sizes as admission did (512m + 256m + 128m off-heap = 896Mi), the
// sidecar accepts, and Spark completes; with an overhead that takes the
// executor over the cap, admission refuses the pod instead of leaving a
// driver whose every executor the sidecar would refuse.
func TestAlternateKeysSizeExecutors(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			ns := namespace(t)
			execs := trackExecutors(t, ns)

			over := alternatesPod(t, d, "1g")
			_, errOut, err := env.Kubectl(context.Background(), over, "apply", "-n", ns, "-f", "-")
			if err == nil || !strings.Contains(errOut, "spark.yarn.executor.memoryOverhead=1g") || !strings.Contains(errOut, "limits.executor.maxMemory=1Gi") {
				t.Fatalf("a driver whose executors would be 1664Mi: err %v, %s; want a refusal naming the key and the limit", err, errOut)
			}

			kubectl(t, alternatesPod(t, d, "256m"), "apply", "-n", ns, "-f", "-")
			done := waitPod(t, ns, "spark-pi", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, "spark-pi"))
			}
			if pi := piValue(t, log(ns, "spark-pi", "spark")); math.Abs(pi-math.Pi) > 0.01 {
				t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
			}
			pods := execs.Pods()
			if len(pods) == 0 {
				t.Fatal("no executor pods")
			}
			want := resource.MustParse("896Mi")
			for _, p := range pods {
				r := p.Spec.Containers[0].Resources
				if !r.Requests.Memory().Equal(want) || !r.Limits.Memory().Equal(want) {
					t.Errorf("executor %s memory request %s limit %s, want %s as admission computed it", p.Name, r.Requests.Memory(), r.Limits.Memory(), &want)
				}
			}
			t.Logf("Spark %s: over the cap refused at admission; %d executor pod(s) of %s accepted, Pi %v", d.Version, len(pods), &want,
				piValue(t, log(ns, "spark-pi", "spark")))
			if strings.Contains(log(ns, "spark-pi", "spark"), "sparklet policy: ") {
				t.Errorf("the sidecar refused an executor:\n%s", driverLogTail(ns, "spark-pi"))
			}
			waitClean(t, ns, done.Labels[vocab.LabelAppID], 30*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, "spark-pi", metav1.DeleteOptions{})
		})
	}
}

// alternatesPod is examples/spark-pi-pod.yaml with one executor sized by
// the older keys, with the given YARN-era overhead.
func alternatesPod(t *testing.T, d spark.Dist, overhead string) []byte {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.Unmarshal(example(t, "spark-pi-pod.yaml", d), &pod); err != nil {
		t.Fatal(err)
	}
	pod.Annotations[vocab.AnnotationSparkConf] = "spark.executor.instances 1\nspark.executor.memory 512m\nspark.driver.memory 512m\n" +
		"spark.yarn.executor.memoryOverhead " + overhead + "\nspark.unsafe.offHeap true\nspark.memory.offHeap.size 128m\n"
	c := &pod.Spec.Containers[0]
	c.Args[len(c.Args)-1] = "10"
	out, err := yaml.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
