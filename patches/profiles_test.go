package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/vocab"
)

// profileExecutor is an executor Spark asks for with the heap and cores of
// resource profile rp, sized as BasicExecutorFeatureStep sizes it (heap +
// 384 MiB overhead).
func profileExecutor(rp, heap, cores, total string) *corev1.Pod {
	return executorPod(func(p *corev1.Pod) {
		p.Labels[vocab.LabelResourceProfileID] = rp
		c := &p.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "SPARK_EXECUTOR_CORES", Value: cores}, {Name: "SPARK_EXECUTOR_MEMORY", Value: heap}}
		memory := resource.MustParse(total)
		c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits = memory, corev1.ResourceList{corev1.ResourceMemory: memory}
	})
}

// Under an enforced memory key that is not the heap, an executor of a
// non-default resource profile keeps its own heap; the default profile's
// executors, and any executor under an enforced heap, get the driver's or
// the enforced one.
func TestProfileExecutorKeepsItsHeap(t *testing.T) {
	driver := driverPod()
	driver.UID = "driver-uid"
	driver.Annotations = map[string]string{vocab.AnnotationEffectiveConf: "spark.executor.memory 512m\n"}
	overhead := "spark:\n  enforced: {spark.executor.memoryOverhead: 400m}\nallowedImages: [\"apache/spark:*\"]\n"
	heap := "spark:\n  enforced: {spark.executor.memory: 768m}\nallowedImages: [\"apache/spark:*\"]\n"
	for _, tc := range []struct {
		name, policy, rp, wantHeap, wantTotal string
	}{
		{"profile 1, enforced overhead", overhead, "1", "640m", "1040Mi"},
		{"profile 0, enforced overhead", overhead, "0", "512m", "912Mi"},
		{"no profile label, enforced overhead", overhead, "", "512m", "912Mi"},
		{"profile 1, enforced heap", heap, "1", "768m", "1152Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := profileExecutor(tc.rp, "640m", "1", "1024Mi")
			if tc.rp == "" {
				delete(pod.Labels, vocab.LabelResourceProfileID)
			}
			in := ExecutorInput{Policy: mustPolicy(t, tc.policy), Driver: ReadDriver(driver), AppID: "spark-test"}
			if _, err := Executor(pod, in); err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			got := c.Env[envIndex(c.Env, "SPARK_EXECUTOR_MEMORY")].Value + " " + c.Resources.Requests.Memory().String() + " " + c.Resources.Limits.Memory().String()
			if want := tc.wantHeap + " " + tc.wantTotal + " " + tc.wantTotal; got != want {
				t.Errorf("heap, request and limit %q, want %q", got, want)
			}
		})
	}
}

// Under an enforced spark.executor.cores, an executor of a non-default
// resource profile that asks for more cores is refused, naming the key;
// one of the default profile gets the enforced cores, and a profile's
// executor with no more cores than enforced keeps them.
func TestProfileExecutorCoresUnderEnforcedCores(t *testing.T) {
	pol := mustPolicy(t, "spark:\n  enforced: {spark.executor.cores: \"2\"}\nallowedImages: [\"apache/spark:*\"]\n")
	for _, tc := range []struct {
		rp, cores, want string // want: the cores kept, or "refused"
	}{
		{"1", "4", "refused"},
		{"1", "2", "2"},
		{"1", "1", "1"},
		{"0", "4", "2"},
	} {
		pod := profileExecutor(tc.rp, "512m", tc.cores, "896Mi")
		in := executorInput(t)
		in.Policy = pol
		_, err := Executor(pod, in)
		var r *Refused
		switch {
		case tc.want == "refused":
			if !errors.As(err, &r) || r.Reason != "over-enforced-cores" ||
				!strings.Contains(r.Message, "resource profile 1 asks for 4 cores, more than the enforced spark.executor.cores=2") {
				t.Errorf("profile %s with %s cores: err = %v, want a refusal naming spark.executor.cores=2", tc.rp, tc.cores, err)
			}
		case err != nil:
			t.Errorf("profile %s with %s cores: %v", tc.rp, tc.cores, err)
		default:
			c := pod.Spec.Containers[0]
			if got := c.Env[envIndex(c.Env, "SPARK_EXECUTOR_CORES")].Value; got != tc.want {
				t.Errorf("profile %s with %s cores: SPARK_EXECUTOR_CORES=%s, want %s", tc.rp, tc.cores, got, tc.want)
			}
		}
	}
}
