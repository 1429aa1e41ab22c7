package main

import (
	"math"
	"testing"
)

func TestParseAndQuantile(t *testing.T) {
	text := `# HELP x
apiserver_request_total{code="201",component="apiserver",resource="pods",subresource="",verb="POST"} 10
apiserver_request_total{code="200",component="apiserver",resource="pods",subresource="status",verb="PATCH"} 7
apiserver_request_total{code="200",component="apiserver",resource="configmaps",subresource="",verb="LIST"} 3
apiserver_request_duration_seconds_bucket{resource="pods",verb="POST",le="0.01"} 50
apiserver_request_duration_seconds_bucket{resource="pods",verb="POST",le="0.1"} 90
apiserver_request_duration_seconds_bucket{resource="pods",verb="POST",le="+Inf"} 100
apiserver_request_duration_seconds_bucket{resource="pods",verb="WATCH",le="0.01"} 0
apiserver_request_duration_seconds_bucket{resource="pods",verb="WATCH",le="+Inf"} 1000
`
	ms := parseMetrics(text)
	if got := requestsByVerb(ms, "pods"); len(got) != 1 || got["POST"] != 10 {
		t.Errorf("pod requests = %v, want POST 10 only", got)
	}
	if got := requestsByVerb(ms, ""); got["PATCH"] != 7 || got["LIST"] != 3 {
		t.Errorf("all requests = %v", got)
	}
	b := latencyBuckets(ms)
	if got := quantile(0.5, b); got != 0.01 {
		t.Errorf("p50 = %v, want 0.01", got)
	}
	if got := quantile(0.7, b); math.Abs(got-0.055) > 1e-9 {
		t.Errorf("p70 = %v, want 0.055 (interpolated)", got)
	}
	if got := quantile(0.99, b); got != 0.1 {
		t.Errorf("p99 = %v, want 0.1 (the last finite bound)", got)
	}
}
