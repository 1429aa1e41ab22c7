package main

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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
	good := options{executors: 1, admissions: 1, drivers: 1, perDriver: 1, idle: 1, steady: 1, sections: "all", sidecarExecutors: []int{1}, sidecarIdle: 1}
	if err := good.validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for flag, o := range map[string]options{
		"--sections":          func() options { x := good; x.sections = "webhook,alloc"; return x }(),
		"--executors":         func() options { x := good; x.executors = 0; return x }(),
		"--idle":              func() options { x := good; x.idle = 0; return x }(),
		"--scheduler-qps":     func() options { x := good; x.schedulerQPS = -1; return x }(),
		"--sidecar-executors": func() options { x := good; x.sidecarExecutors = []int{-1}; return x }(),
		"--sidecar-idle":      func() options { x := good; x.sidecarIdle = 0; return x }(),
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

func TestPatchParts(t *testing.T) {
	patch := `[{"op":"add","path":"/metadata/annotations/sparklet.io~1status","value":"{}"},` +
		`{"op":"add","path":"/metadata/labels/spark-app-selector","value":"spark-1"},` +
		`{"op":"add","path":"/spec/initContainers","value":[{"name":"a","image":"x"},{"name":"b"}]},` +
		`{"op":"add","path":"/metadata/annotations","value":{"k1":"v","k2":"vv"}},` +
		`{"op":"add","path":"/spec/initContainers/0","value":{"name":"sparklet-sidecar","image":"s"}},` +
		`{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"A","value":"1"}},` +
		`{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"B","value":"2"}}]`
	parts, err := patchParts([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	sum := 0
	for _, p := range parts {
		got[p.name] = [2]int{p.ops, p.bytes}
		sum += p.bytes
	}
	if sum != len(patch)-1 { // the brackets less the last op's comma
		t.Errorf("parts sum to %d bytes, the patch has %d", sum, len(patch))
	}
	if got["initContainers a"][1] != len(`{"name":"a","image":"x"},`) || got["annotations k2"][1] != len(`"k2":"vv",`) {
		t.Errorf("members not split with their bytes: %v", got)
	}
	for name, ops := range map[string]int{"annotations sparklet.io/status": 1, "labels spark-app-selector": 1, "/spec/initContainers": 1, "initContainers b": 0,
		"initContainers sparklet-sidecar": 1, "/spec/containers/0": 2} {
		if got[name][0] != ops {
			t.Errorf("part %q has %d operations, want %d (all: %v)", name, got[name][0], ops, got)
		}
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].bytes > parts[i-1].bytes {
			t.Errorf("parts not largest first: %v", parts)
		}
	}
}

func TestReadRuntime(t *testing.T) {
	log := `time="2026-11-27T10:00:59.682516733Z" level=info msg="RunPodSandbox for name:\"start-2\" uid:\"u\" namespace:\"start-sparklet\""
time="2026-11-27T10:01:00.100000000Z" level=info msg="RunPodSandbox for name:\"start-2\" uid:\"v\" namespace:\"start-plain\" returns sandbox id \"other\""
time="2026-11-27T10:01:00.284772954Z" level=info msg="RunPodSandbox for name:\"start-2\" uid:\"u\" namespace:\"start-sparklet\" returns sandbox id \"sb1\""
time="2026-11-27T10:01:00.294196811Z" level=info msg="CreateContainer within sandbox \"sb1\" for container name:\"sparklet-sidecar\""
time="2026-11-27T10:01:00.310000000Z" level=info msg="CreateContainer within sandbox \"sb1\" for name:\"sparklet-sidecar\" returns container id \"c1\""
time="2026-11-27T10:01:00.320000000Z" level=info msg="StartContainer for \"c1\""
time="2026-11-27T10:01:00.380000000Z" level=info msg="StartContainer for \"c1\" returns successfully"
time="2026-11-27T10:01:00.400000000Z" level=info msg="CreateContainer within sandbox \"other\" for container name:\"spark\""
time="2026-11-27T10:01:00.500000000Z" level=info msg="CreateContainer within sandbox \"sb1\" for container name:\"sparklet-spark-conf\""
time="2026-11-27T10:01:00.920755580Z" level=info msg="CreateContainer within sandbox \"sb1\" for container name:\"spark\""
`
	f := t.TempDir() + "/containerd.log"
	if err := os.WriteFile(f, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readRuntime(f, "start-sparklet", "start-2")
	if err != nil {
		t.Fatal(err)
	}
	if want := 920755580*time.Nanosecond - 284772954*time.Nanosecond; got.span() != want {
		t.Errorf("span %v, want %v", got.span(), want)
	}
	if want := 380*time.Millisecond - 284772954*time.Nanosecond; got.started["sparklet-sidecar"] != want {
		t.Errorf("sidecar started %v after the sandbox, want %v", got.started["sparklet-sidecar"], want)
	}
	if want := []string{"sparklet-sidecar", "sparklet-spark-conf"}; !slices.Equal(got.inits, want) {
		t.Errorf("init containers %q, want %q", got.inits, want)
	}
	if _, err := readRuntime(f, "start-sparklet", "start-3"); err == nil {
		t.Error("no error for a pod the log does not have")
	}
}
