package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
)

// TestConnectPolicy: the connect section's Spark defaults go to Connect
// servers only, over the spark section's and under the pod's own; its
// enforced values and idle timeout refuse a pod that sets another; a 3.5
// server, which has no session timeout of its own, is told so.
func TestConnectPolicy(t *testing.T) {
	pol := mustPolicy(t, `
spark:
  defaults: {spark.dynamicAllocation.enabled: "false", spark.executor.instances: "2"}
connect:
  maxSessions: 4
  sessionIdleTimeout: 15m
  spark:
    defaults:
      spark.dynamicAllocation.enabled: "true"
      spark.dynamicAllocation.minExecutors: "0"
      spark.dynamicAllocation.executorIdleTimeout: 60s
    enforced: {spark.dynamicAllocation.shuffleTracking.enabled: "true"}
`)
	server := func(image string, args ...string) *corev1.Pod {
		return driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = append([]string{"driver", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"}, args...)
		})
	}
	conf := func(t *testing.T, pod *corev1.Pod) map[string]string {
		t.Helper()
		if _, err := inject(t, pod, pol); err != nil {
			t.Fatal(err)
		}
		c, err := sparkconf.Parse(pod.Annotations[vocab.AnnotationEffectiveConf])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	got := conf(t, server("apache/spark:4.3.0", "--conf", "spark.dynamicAllocation.executorIdleTimeout=5m"))
	for k, want := range map[string]string{
		"spark.dynamicAllocation.enabled":                     "true", // the connect default over the spark one
		"spark.dynamicAllocation.minExecutors":                "0",
		"spark.dynamicAllocation.executorIdleTimeout":         "5m", // the pod's own
		"spark.dynamicAllocation.shuffleTracking.enabled":     "true",
		"spark.connect.session.manager.defaultSessionTimeout": "900000ms",
		"spark.executor.instances":                            "2",
	} {
		if got[k] != want {
			t.Errorf("a Connect server's %s = %q, want %q", k, got[k], want)
		}
	}
	plain := conf(t, driverPod())
	if plain["spark.dynamicAllocation.enabled"] != "false" || plain["spark.dynamicAllocation.minExecutors"] != "" ||
		plain["spark.connect.session.manager.defaultSessionTimeout"] != "" {
		t.Errorf("a plain driver got the connect section:\n%s", driverPod().Annotations[vocab.AnnotationEffectiveConf])
	}

	for _, tc := range []struct{ arg, says string }{
		{"spark.dynamicAllocation.shuffleTracking.enabled=false", "connect.spark.enforced enforces spark.dynamicAllocation.shuffleTracking.enabled=true"},
		{"spark.connect.session.manager.defaultSessionTimeout=-1", "connect.sessionIdleTimeout (15m) enforces spark.connect.session.manager.defaultSessionTimeout=900000ms"},
	} {
		_, err := inject(t, server("apache/spark:4.3.0", "--conf", tc.arg), pol)
		var refused *Refused
		if !errors.As(err, &refused) || refused.Reason != "enforced-key" || !strings.Contains(refused.Message, tc.says) {
			t.Errorf("--conf %s: err = %v, want an enforced-key refusal saying %q", tc.arg, err, tc.says)
		}
	}

	old := server("apache/spark:3.5.9", "--packages", "org.apache.spark:spark-connect_2.12:3.5.9")
	res, err := Driver(old, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "connect.sessionIdleTimeout (15m) is Spark's own session timeout from Spark 4.0; a Spark 3.5.9 server keeps a session 60 minutes") ||
		strings.Contains(w, "maxSessions") {
		t.Errorf("a 3.5 server under connect.sessionIdleTimeout and maxSessions: warnings %q, want the timeout's alone (the sidecar holds it to maxSessions)", w)
	}
}
