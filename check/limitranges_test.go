package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMissingUnderLimitRanges(t *testing.T) {
	q := resource.MustParse
	lr := func(item corev1.LimitRangeItem) []corev1.LimitRange {
		return []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}}
	}
	withLimit := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}
	requestOnly := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("50m")}}
	for _, tc := range []struct {
		name   string
		ranges []corev1.LimitRange
		r      corev1.ResourceRequirements
		want   []string
	}{
		{"ratio, no limit", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: q("10")}}),
			requestOnly, []string{"requires a cpu limit"}},
		{"ratio, a limit (its request)", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: q("10")}}),
			withLimit, nil},
		{"max memory, none", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}),
			requestOnly, []string{"requires a memory limit"}},
		{"min memory, none", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{corev1.ResourceMemory: q("8Mi")}}),
			withLimit, []string{"requires a memory request"}},
		{"a pod's max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: q("4")}}),
			requestOnly, nil},
		{"defaults only", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: q("1")}}),
			requestOnly, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missingUnderLimitRanges(tc.ranges, tc.r)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d problems like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], "LimitRange lr ") {
					t.Errorf("problem %d %q, want it to name LimitRange lr and say %q", i, got[i], w)
				}
			}
		})
	}
}
