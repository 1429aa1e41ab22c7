package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

func lookupIn(env []corev1.EnvVar) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, v := range env {
			if v.Name == name {
				return v.Value, true
			}
		}
		return "", false
	}
}

func TestSidecarEnvRoundTrip(t *testing.T) {
	want := SidecarEnv{PodName: "pi", Namespace: "spark-jobs", Listen: "127.0.0.1:9000", MetricsListen: ":9001",
		TokenFile: "/tmp/token", SparkContainer: "spark", PolicyJSON: `{"namespace":"spark-jobs"}`, ConfSHA256: "abc", SchedulingSHA256: "def", EventLogDir: "/var/logs"}
	if got := ParseSidecarEnv(lookupIn(want.EnvVars())); got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}

func TestSidecarEnvPodFromDownwardAPI(t *testing.T) {
	for _, v := range (SidecarEnv{}).EnvVars()[:2] {
		if v.Value != "" || v.ValueFrom == nil || v.ValueFrom.FieldRef == nil {
			t.Fatalf("%s = %+v, want a downward API reference", v.Name, v)
		}
		want := map[string]string{vocab.EnvPodName: "metadata.name", vocab.EnvPodNamespace: "metadata.namespace"}[v.Name]
		if v.ValueFrom.FieldRef.FieldPath != want {
			t.Errorf("%s refers to %q, want %q", v.Name, v.ValueFrom.FieldRef.FieldPath, want)
		}
	}
}

func TestSidecarEnvDefaults(t *testing.T) {
	got := ParseSidecarEnv(lookupIn(nil))
	want := SidecarEnv{Listen: "127.0.0.1:7443", MetricsListen: ":7444", TokenFile: "/var/run/sparklet/jvm/token"}
	if got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	// A variable set to empty is kept, so the sidecar can report it.
	set := ParseSidecarEnv(lookupIn([]corev1.EnvVar{{Name: vocab.EnvListen}}))
	if set.Listen != "" {
		t.Errorf("Listen = %q, want the empty value that was set", set.Listen)
	}
	// The defaults are the built-in policy's.
	s := policy.Default("dev").Sidecar
	if got.Listen != s.Listen() || got.MetricsListen != s.MetricsListen() {
		t.Errorf("defaults %q and %q, built-in policy %q and %q", got.Listen, got.MetricsListen, s.Listen(), s.MetricsListen())
	}
}

func TestSidecarPolicy(t *testing.T) {
	e, err := SidecarPolicy("", "team-a", "dev")
	if err != nil || e.Namespace != "team-a" || e.Sidecar.Port != policy.DefaultSidecarPort {
		t.Errorf("no policy given: %+v, %v; want the built-in one for team-a", e, err)
	}
	if _, err := SidecarPolicy("{", "team-a", "dev"); err == nil || !strings.HasPrefix(err.Error(), vocab.EnvPolicy+": ") {
		t.Errorf("err = %v, want one naming %s", err, vocab.EnvPolicy)
	}
	e, err = SidecarPolicy(`{"namespace":"team-b","limits":{"maxExecutors":3}}`, "team-a", "dev")
	if err != nil || e.Namespace != "team-b" || e.Limits.MaxExecutors != 3 {
		t.Errorf("decoded %+v, %v", e, err)
	}
}
