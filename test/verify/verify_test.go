package verify

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// testPolicy is the patches tests' policy: credentials, limits and
// enforced values in play.
var testPolicy = func() string {
	data, err := os.ReadFile("../../patches/testdata/policy.yaml")
	if err != nil {
		panic(err)
	}
	return string(data)
}()

func TestDriver(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Labels: map[string]string{vocab.LabelRole: "driver"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "spark", Image: "apache/spark:3.5.4",
			Args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar"},
		}}},
	}
	if problems := Driver(pod); len(problems) == 0 {
		t.Error("an uninjected pod passed verification")
	}
	p, err := policy.Parse([]byte(testPolicy), "dev")
	if err != nil {
		t.Fatal(err)
	}
	in := patches.Input{Namespace: "spark-jobs", Policy: p.For("spark-jobs"), Version: "test", AppID: "spark-test"}
	if res, err := patches.Driver(pod, in); err != nil || res.Skipped != nil {
		t.Fatalf("skipped=%+v err=%v", res.Skipped, err)
	}
	if problems := Driver(pod); len(problems) > 0 {
		t.Errorf("an injected pod failed verification: %v", problems)
	}
	leaky := pod.DeepCopy()
	leaky.Spec.Containers[0].VolumeMounts = append(leaky.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: patches.VolumeToken, MountPath: "/t"})
	if problems := Driver(leaky); len(problems) != 1 || !strings.Contains(problems[0], "service-account token") {
		t.Errorf("a token leak was not reported: %v", problems)
	}
}
