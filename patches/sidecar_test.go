package patches

import (
	"encoding/json"
	"testing"

	"github.com/sparklet/sparklet/vocab"
)

// TestSidecarEnvReadsBack: what the webhook puts in the sidecar's env is
// what the sidecar reads back, and agrees with the JVM's configuration.
func TestSidecarEnvReadsBack(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	pod := driverPod()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	for _, c := range pod.Spec.InitContainers {
		if c.Name == SidecarName {
			env = map[string]string{}
			for _, v := range c.Env {
				if v.ValueFrom == nil {
					env[v.Name] = v.Value
				}
			}
		}
	}
	if env == nil {
		t.Fatalf("no %s container", SidecarName)
	}
	got := ParseSidecarEnv(func(name string) (string, bool) { v, ok := env[name]; return v, ok })
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if got.Listen != "127.0.0.1:7443" || conf["spark.master"] != "k8s://http://"+got.Listen {
		t.Errorf("sidecar listens on %q, the JVM's spark.master is %q", got.Listen, conf["spark.master"])
	}
	if got.MetricsListen != ":7444" || got.TokenFile != conf["spark.kubernetes.authenticate.oauthTokenFile"] || got.SparkContainer != "spark" {
		t.Errorf("sidecar env = %+v", got)
	}
	if got.ConfSHA256 != DeliveredDigest(pod) {
		t.Errorf("%s = %q does not match the effective conf", vocab.EnvConfSHA256, got.ConfSHA256)
	}
	if got.PodName != "" || got.Namespace != "" {
		t.Errorf("pod name and namespace should come from the downward API, not values: %+v", got)
	}
	back, err := SidecarPolicy(got.PolicyJSON, "elsewhere", "dev")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(pol)
	if have, _ := json.Marshal(back); string(have) != string(want) {
		t.Errorf("policy read back = %s, want %s", have, want)
	}
}
