package check

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/policy"
)

func TestLimitRangeProblemsLeftOut(t *testing.T) {
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
			got := limitRangeProblems(tc.ranges, tc.r, false)
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

func TestLimitRangeAndQuotaValues(t *testing.T) {
	q := resource.MustParse
	conf := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("64Mi")},
	}
	ranges := []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:                 corev1.LimitTypeContainer,
		Max:                  corev1.ResourceList{corev1.ResourceMemory: q("32Mi")},
		Min:                  corev1.ResourceList{corev1.ResourceCPU: q("20m")},
		MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: q("10"), corev1.ResourceMemory: q("4")},
	}}}}}
	got := limitRangeProblems(ranges, conf, true)
	want := []string{
		"memory limit 64Mi is above LimitRange lr's max 32Mi",
		"cpu request 10m is below LimitRange lr's min 20m",
		"cpu limit 500m is 50 times its request 10m, above LimitRange lr's maxLimitRequestRatio 10",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := limitRangeProblems(ranges, conf, false); len(got) != 0 {
		t.Errorf("with values false: %q, want nothing (every value is present)", got)
	}

	quotas := []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceLimitsCPU: q("8"), corev1.ResourceMemory: q("8Gi"), corev1.ResourcePods: q("10"),
	}}}}
	sidecar := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("50m")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("256Mi")}}
	got = quotaProblems(quotas, sidecar)
	want = []string{"ResourceQuota q counts limits.cpu, which every container then needs: set limits.cpu"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("quota: got %q, want %q (a memory request is its limit when left out)", got, want)
	}
}

func TestNamespaceReportsInjectedResources(t *testing.T) {
	optedIn := map[string]string{"sparklet.io/inject": "enabled", "kubernetes.io/metadata.name": "team-a"}
	ratio := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu-ratio", Namespace: "team-a"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}}}}}
	for _, tc := range []struct {
		name   string
		policy string
		want   []string
	}{
		{"built in", "", []string{
			"sparklet-sidecar (the policy's sidecar.resources): LimitRange cpu-ratio requires a cpu limit",
			"sparklet-spark-conf (the policy's sidecar.confResources): cpu limit 500m is 50 times its request 10m, above LimitRange cpu-ratio's maxLimitRequestRatio 10; the API server refuses every such driver",
			"sparklet-init, with sparklet.io/fetch (the policy's sidecar.resources): LimitRange cpu-ratio requires a cpu limit"}},
		{"tuned", "sidecar:\n  resources: {requests: {cpu: 50m}, limits: {cpu: 500m}}\n  confResources: {requests: {cpu: 50m}, limits: {cpu: 500m}}\n",
			[]string{"LimitRanges and ResourceQuotas: sparklet's containers meet them"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, hookConfig(), ns("team-a", optedIn), sa("team-a"), ratio)
			p, err := policy.Parse([]byte(tc.policy), "test")
			if err != nil {
				t.Fatal(err)
			}
			o.Policy = p
			var out strings.Builder
			if _, err := Namespace(context.Background(), &out, o, "team-a"); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
