package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestExecutorMemoryOf(t *testing.T) {
	cases := []struct {
		name   string
		conf   map[string]string
		spark3 bool
		want   ExecutorMemory
	}{
		{"defaults", nil, false, ExecutorMemory{Heap: 1024, Overhead: 384}},
		{"factor of a large heap", map[string]string{"spark.executor.memory": "8g"}, false, ExecutorMemory{Heap: 8192, Overhead: 819}},
		{"kubernetes factor", map[string]string{"spark.executor.memory": "8g", "spark.kubernetes.memoryOverheadFactor": "0.4"}, false,
			ExecutorMemory{Heap: 8192, Overhead: 3276}},
		{"executor factor wins", map[string]string{"spark.executor.memory": "8g", "spark.kubernetes.memoryOverheadFactor": "0.4",
			"spark.executor.memoryOverheadFactor": "0.2"}, false, ExecutorMemory{Heap: 8192, Overhead: 1638}},
		{"explicit overhead", map[string]string{"spark.executor.memory": "2048", "spark.executor.memoryOverhead": "100m"}, false,
			ExecutorMemory{Heap: 2048, Overhead: 100}},
		{"min overhead in 4.x", map[string]string{"spark.executor.minMemoryOverhead": "1g"}, false, ExecutorMemory{Heap: 1024, Overhead: 1024}},
		{"no min overhead in 3.x", map[string]string{"spark.executor.minMemoryOverhead": "1g"}, true, ExecutorMemory{Heap: 1024, Overhead: 384}},
		{"off-heap", map[string]string{"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "2g"}, false,
			ExecutorMemory{Heap: 1024, Overhead: 384, OffHeap: 2048}},
		{"off-heap in bytes", map[string]string{"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "1048576"}, false,
			ExecutorMemory{Heap: 1024, Overhead: 384, OffHeap: 1}},
		{"off-heap disabled", map[string]string{"spark.memory.offHeap.size": "2g"}, false, ExecutorMemory{Heap: 1024, Overhead: 384}},
		{"pyspark memory of a python app", map[string]string{"spark.executor.pyspark.memory": "512m", "spark.kubernetes.resource.type": "python"}, false,
			ExecutorMemory{Heap: 1024, Overhead: 384, PySpark: 512}},
		{"pyspark memory ignored in client mode", map[string]string{"spark.executor.pyspark.memory": "512m"}, false,
			ExecutorMemory{Heap: 1024, Overhead: 384}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExecutorMemoryOf(tc.conf, tc.spark3)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestExecutorMemoryErrorsNameTheKey(t *testing.T) {
	for key, conf := range map[string]map[string]string{
		"spark.executor.memory":               {"spark.executor.memory": "lots"},
		"spark.executor.memoryOverheadFactor": {"spark.executor.memoryOverheadFactor": "-1"},
		"spark.memory.offHeap.size":           {"spark.memory.offHeap.enabled": "true"},
		"spark.executor.minMemoryOverhead":    {"spark.executor.minMemoryOverhead": "1.5g"},
	} {
		if _, err := ExecutorMemoryOf(conf, false); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: err = %v, want one naming %s", conf, err, key)
		}
	}
}

func TestIsSpark3Image(t *testing.T) {
	for image, want := range map[string]bool{
		"apache/spark:3.5.4": true, "docker.io/apache/spark:v3.4.1-python3": true, "registry:5000/spark:3.5.0@sha256:ab": true,
		"apache/spark:4.0.0": false, "apache/spark": false, "registry:3.5/spark:latest": false,
	} {
		if got := isSpark3Image(image); got != want {
			t.Errorf("isSpark3Image(%q) = %v, want %v", image, got, want)
		}
	}
}

// The old max(384, mem/10) shortcut admitted this pod; Spark asks for
// 28g + 11468Mi (factor 0.4) = 40140Mi, over the 32Gi limit.
func TestExecutorMemoryRefusalUsesSparkArithmetic(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for name, tc := range map[string]struct {
		conf    string
		refused bool
	}{
		"factor":    {"spark.executor.memory=28g\nspark.executor.memoryOverheadFactor=0.4", true},
		"off-heap":  {"spark.executor.memory=20g\nspark.memory.offHeap.enabled=true\nspark.memory.offHeap.size=12g", true},
		"fits":      {"spark.executor.memory=28g", false},
		"allocator": {"spark.kubernetes.allocation.pods.allocator=direct", false},
	} {
		pod := driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf} })
		_, err := inject(t, pod, pol)
		var r *Refused
		if got := errors.As(err, &r); got != tc.refused {
			t.Errorf("%s: err = %v, want refused=%v", name, err, tc.refused)
		}
		if tc.refused && (r.Reason != "over-limit" || !strings.Contains(r.Message, "limits.executor.maxMemory")) {
			t.Errorf("%s: refusal = %s: %s", name, r.Reason, r.Message)
		}
	}
}

func TestRefuseControllerAllocators(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for _, allocator := range []string{"statefulset", "deployment", "custom.Allocator"} {
		pod := driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: keyAllocator + "=" + allocator}
		})
		_, err := inject(t, pod, pol)
		var r *Refused
		if !errors.As(err, &r) || r.Reason != "allocator" || !strings.Contains(r.Message, keyAllocator+"="+allocator) {
			t.Errorf("%s: err = %v, want an allocator refusal naming the key", allocator, err)
		}
	}
}
