package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Spark 4.1+ annotates its pod with the exception that ended it, through
// the sidecar, unless the policy or the user turn it off.
func TestExitExceptionOnFrom41(t *testing.T) {
	sidecar := "http://127.0.0.1:7443"
	for _, tc := range []struct {
		name, image, policy, userConf, want string
	}{
		{"4.3", "apache/spark:4.3.0", "", "", "true"},
		{"4.1", "apache/spark:4.1.1-scala2.13-java17-ubuntu", "", "", "true"},
		{"a tag naming no version is the newest line", "registry.example.com/spark-app:latest", "", "", "true"},
		{"4.0 does not read it", "apache/spark:4.0.1", "", "", ""},
		{"3.5", "apache/spark:3.5.4", "", "", ""},
		{"policy default off", "apache/spark:4.3.0", "spark:\n  defaults: {" + KeyAnnotateExitException + ": \"false\"}\n", "", "false"},
		{"user turns the policy default back on", "apache/spark:4.3.0", "spark:\n  defaults: {" + KeyAnnotateExitException + ": \"false\"}\n", KeyAnnotateExitException + " true", "true"},
		{"user off", "apache/spark:4.3.0", "", KeyAnnotateExitException + " false", "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = tc.image
				if tc.userConf != "" {
					p.Annotations = map[string]string{"sparklet.io/spark-conf": tc.userConf}
				}
			})
			if _, err := inject(t, pod, mustPolicy(t, tc.policy+"allowedImages: [\"apache/spark:*\", \"registry.example.com/*\"]\n")); err != nil {
				t.Fatal(err)
			}
			conf, err := EffectiveConf(pod.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			if got := conf[KeyAnnotateExitException]; got != tc.want {
				t.Errorf("%s = %q, want %q", KeyAnnotateExitException, got, tc.want)
			}
			// Spark builds the annotation's client from the driver master
			// and the driver's mounted token, on every version.
			if got := conf["spark.kubernetes.driver.master"]; got != sidecar {
				t.Errorf("spark.kubernetes.driver.master = %q, want the sidecar %s", got, sidecar)
			}
			if got := conf["spark.kubernetes.authenticate.driver.mounted.oauthTokenFile"]; got != TokenFile {
				t.Errorf("the driver's mounted token file = %q, want %s", got, TokenFile)
			}
		})
	}
}

// The policy may enforce it off; the pod may not point the driver's
// client elsewhere.
func TestExitExceptionEnforcedOffAndReservedKeys(t *testing.T) {
	pol := mustPolicy(t, "spark:\n  enforced: {"+KeyAnnotateExitException+": \"false\"}\nallowedImages: [\"apache/spark:*\", \"registry.example.com/*\"]\n")
	pod := driverPod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "apache/spark:4.3.0" })
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	if conf, _ := EffectiveConf(pod.Annotations); conf[KeyAnnotateExitException] != "false" {
		t.Errorf("%s = %q under a policy that enforces false", KeyAnnotateExitException, conf[KeyAnnotateExitException])
	}
	on := driverPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "apache/spark:4.3.0"
		p.Annotations = map[string]string{"sparklet.io/spark-conf": KeyAnnotateExitException + " true"}
	})
	if _, err := inject(t, on, pol); err == nil || !strings.Contains(err.Error(), KeyAnnotateExitException) {
		t.Errorf("a pod turning on what the policy enforces off: %v, want a refusal naming the key", err)
	}
	for _, key := range []string{"spark.kubernetes.driver.master", "spark.kubernetes.authenticate.driver.mounted.oauthTokenFile"} {
		pod := driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"sparklet.io/spark-conf": key + " https://kubernetes.default.svc"}
		})
		if _, err := inject(t, pod, mustPolicy(t, "allowedImages: [\"apache/spark:*\", \"registry.example.com/*\"]\n")); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("a pod setting %s: %v, want a refusal naming it", key, err)
		}
	}
}
