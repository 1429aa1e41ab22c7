package main

import (
	"math"
	"strings"
	"testing"
)

func TestParseAndQuantile(t *testing.T) {
	text := `# HELP x
apiserver_request_total{code="201",component="apiserver",resource="pods",subresource="",verb="POST"} 10
apiserver_request_total{code="404",component="apiserver",resource="pods",subresource="",verb="DELETE"} 125
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
		t.Errorf("pod requests = %v, want POST 10 only (a 404 is not counted)", got)
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

func TestOptionsValidate(t *testing.T) {
	good := options{executors: 1, admissions: 1, drivers: 1, perDriver: 1, idle: 1, steady: 1, sections: "all", sidecarExecutors: []int{1}}
	if err := good.validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for flag, o := range map[string]options{
		"--sections":      func() options { x := good; x.sections = "webhook,alloc"; return x }(),
		"--executors":     func() options { x := good; x.executors = 0; return x }(),
		"--idle":          func() options { x := good; x.idle = 0; return x }(),
		"--scheduler-qps": func() options { x := good; x.schedulerQPS = -1; return x }(),
	} {
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: err = %v, want one naming the flag", flag, err)
		}
	}
}

func TestTableSeparatorMatchesHeader(t *testing.T) {
	var r report
	r.table("| a | b | c |", []string{"| 1 | 2 | 3 |"})
	want := "| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n\n"
	if got := r.b.String(); got != want {
		t.Errorf("table:\n%q\nwant\n%q", got, want)
	}
}
