package webhook

import (
	"encoding/json"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

func BenchmarkZZ(b *testing.B) {
	data, _ := os.ReadFile("../examples/spark-pi-pod.yaml")
	raw, _ := yamlToJSON(data)
	body := review(raw)
	b.Run("review", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var r admissionv1.AdmissionReview
			json.Unmarshal(body, &r)
		}
	})
	b.Run("pod", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var p corev1.Pod
			json.Unmarshal(raw, &p)
		}
	})
	b.Run("valid", func(b *testing.B) {
		for range b.N {
			json.Valid(body)
		}
	})
}
