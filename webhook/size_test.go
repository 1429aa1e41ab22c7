package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

// sizedDriver is a driver pod whose sparklet.io/spark-conf is size bytes.
func sizedDriver(t *testing.T, size int) []byte {
	t.Helper()
	var conf strings.Builder
	for i := 0; conf.Len() < size-100; i++ {
		fmt.Fprintf(&conf, "spark.executorEnv.FILLER_%05d %s\n", i, strings.Repeat("x", 80))
	}
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "big-conf", Labels: map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{vocab.AnnotationSparkConf: conf.String()}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:4.0.0",
			Args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar"}}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAnnotationBudget: a 200 KiB conf, which used to come back at twice
// that and over the API server's 256 KiB, is admitted; one that sparklet's
// own annotations would push over the limit is refused with the sizes
// named (testdata/oversized-annotations.refused.txt).
func TestAnnotationBudget(t *testing.T) {
	h := testHandler(t)
	out, refused := admitPod(t, h, sizedDriver(t, 200<<10))
	if refused != "" {
		t.Fatalf("200 KiB conf refused: %s", refused)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k, v := range pod.Annotations {
		total += len(k) + len(v)
	}
	if total > 256<<10 {
		t.Errorf("admitted with %d bytes of annotations, over the API server's limit", total)
	}
	_, refused = admitPod(t, h, sizedDriver(t, 255<<10))
	compareGolden(t, "testdata/oversized-annotations.refused.txt", []byte(refused+"\n"))
}
