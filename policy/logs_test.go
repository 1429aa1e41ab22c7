package policy

import (
	"strings"
	"testing"
)

func TestLogsValidation(t *testing.T) {
	for text, want := range map[string]string{
		"logs: {executorURL: \"logs.example.com/{{POD_NAME}}\"}\n":                         "logs.executorURL: \"logs.example.com/{{POD_NAME}}\": want an http:// or https:// URL",
		"logs: {executorURL: \"https://logs.example.com/{{FILE_NAME}}\"}\n":                "logs.executorURL: {{FILE_NAME}} is no executor attribute sparklet sets; use {{APP_ID}}",
		"namespaces: {a: {logs: {executorURL: \"https://l.example.com/{{HOSTNAME}}\"}}}\n": "namespaces.a.logs.executorURL: {{HOSTNAME}}",
		"logs: {keepFailedExecutorsSeconds: 600}\n":                                        "logs.keepFailedExecutorsSeconds: must be between 0 and 170, got 600",
		"logs: {keepFailedExecutorsSeconds: -1}\n":                                         "logs.keepFailedExecutorsSeconds: must be between 0 and 170",
	} {
		if _, err := Parse([]byte(text), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
	}
	p, err := Parse([]byte("logs: {executorURL: \"https://logs.example.com/{{NAMESPACE}}/{{POD_NAME}}\", keepFailedExecutorsSeconds: 120}\nnamespaces: {b: {logs: {}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.For("a").ExecutorLogURL; got != "https://logs.example.com/{{NAMESPACE}}/{{POD_NAME}}" {
		t.Errorf("namespace a: %q, want the cluster's", got)
	}
	if got := p.For("b").ExecutorLogURL; got != "" {
		t.Errorf("namespace b: %q, want its own empty section to turn it off", got)
	}
	if a, b := p.For("a").KeepFailedExecutorsSeconds, p.For("b").KeepFailedExecutorsSeconds; a != 120 || b != 0 {
		t.Errorf("keepFailedExecutorsSeconds: a %d, b %d; want the cluster's 120 and b's own 0", a, b)
	}
}
