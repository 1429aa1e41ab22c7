package webhook

import (
	"strings"
	"testing"
)

// TestSkipReasonsAndWarnings checks that a pod left alone is counted under
// its fixed reason and answered with its warning and no patch.
func TestSkipReasonsAndWarnings(t *testing.T) {
	h := testHandler(t)
	for _, tc := range []struct{ fixture, reason, warning string }{
		{"spark-operator-driver", "launched_by_spark_operator", "the Kubeflow spark-operator launched it"},
		{"spark-submit-cluster", "spark_submit_cluster_mode", "spark-submit created it in cluster mode"},
		{"opted-out-with-conf", "opted_out", "sparklet ignored annotation sparklet.io/spark-conf"},
	} {
		resp := call(t, h, review(fixtureJSON(t, "testdata/"+tc.fixture+".pod.yaml"))).Response
		if !resp.Allowed || len(resp.Patch) != 0 {
			t.Errorf("%s: allowed=%v patch=%s, want allowed with no patch", tc.fixture, resp.Allowed, resp.Patch)
		}
		if len(resp.Warnings) == 0 || !strings.Contains(resp.Warnings[0], tc.warning) {
			t.Errorf("%s: warnings %q, want one saying %q", tc.fixture, resp.Warnings, tc.warning)
		}
		if got := counterValue(h.metrics.admissions.WithLabelValues("skipped", tc.reason)); got != 1 {
			t.Errorf("%s: skipped{reason=%q} = %v, want 1", tc.fixture, tc.reason, got)
		}
	}
}
