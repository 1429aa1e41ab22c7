//go:build !sidecaronly

package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// jsonLines decodes every line of out, failing on one that is not JSON.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		lines = append(lines, m)
	}
	return lines
}

// klog lines (client-go's leader election) come out as logrus JSON with the
// subcommand's component, the logger's name and sub-second timestamps.
func TestKlogGoesToLogrus(t *testing.T) {
	var buf strings.Builder
	log, err := newLogger(&buf, "info", "webhook")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(klog.ClearLogger)
	log.Info("own line")
	lg := logr.New(&logrusSink{log: log.WithField("logger", "client-go")}).WithName("leaderelection").WithValues("lock", "ns/name")
	lg.Info("Successfully acquired lease")
	lg.V(4).Info("renewed")
	lg.Error(errors.New("forbidden"), "Error initially creating lease lock")
	klog.InfoS("through klog", "pod", "ns/p")
	klog.V(4).InfoS("klog debug")
	lines := jsonLines(t, buf.String())
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4 (V(4) is debug):\n%s", len(lines), buf.String())
	}
	for i, want := range []map[string]any{
		{"msg": "own line"},
		{"msg": "Successfully acquired lease", "lock": "ns/name", "logger": "client-go/leaderelection"},
		{"msg": "Error initially creating lease lock", "error": "forbidden", "level": "error", "logger": "client-go/leaderelection"},
		{"msg": "through klog", "pod": "ns/p", "logger": "client-go"},
	} {
		m := lines[i]
		if m["component"] != "webhook" {
			t.Errorf("line %d: component %v, want webhook", i, m["component"])
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, m[k], v, m)
			}
		}
		ts, _ := m["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.Contains(ts, ".") {
			t.Errorf("line %d: time %q is not RFC 3339 with sub-second digits", i, ts)
		}
	}
}

// Every subcommand routes klog into its own JSON log before it runs.
func TestEverySubcommandRoutesKlog(t *testing.T) {
	dir := writeFiles(t, map[string]string{"policy.yaml": "limits: {maxExecutors: 1}\n"})
	for _, args := range [][]string{
		{"version"},
		{"policy", "validate", dir + "/policy.yaml"},
		{"inject", "-f", "-", "--ignore-cluster"},
		{"check", "--kubeconfig", dir + "/policy.yaml"}, // fails, after the logger is set up
		{"init", "--annotation-file", dir + "/missing", "--termination-log", dir + "/termination-log"},
		{"sidecar"}, // fails validation without its env
		{"webhook"}, // fails validation without certificates
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Cleanup(klog.ClearLogger)
			var out, errOut strings.Builder
			execute(&app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
			errOut.Reset()
			klog.InfoS("from client-go", "subcommand", args[0])
			lines := jsonLines(t, errOut.String())
			want := args[0]
			if want == "policy" {
				want = "policy-validate"
			}
			if len(lines) != 1 || lines[0]["component"] != want || lines[0]["logger"] != "client-go" || lines[0]["msg"] != "from client-go" {
				t.Errorf("klog after %v: %s", args, errOut.String())
			}
		})
	}
}
