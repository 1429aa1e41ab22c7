package patches

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestConnect(t *testing.T) {
	const server = "org.apache.spark.sql.connect.service.SparkConnectServer"
	serverArgs := func(image string, args ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = append([]string{"driver", "--class", server}, args...)
		}
	}
	restart := func(r corev1.RestartPolicy) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.RestartPolicy = r }
	}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		connect   string
		appPerJVM bool
		refused   string // the refusal's reason, if refused
	}{
		{"a plain driver", driverPod(restart(corev1.RestartPolicyNever)), "", false, ""},
		{"a plain driver that restarts", driverPod(restart(corev1.RestartPolicyOnFailure)), "", true, ""},
		{"4.x server", driverPod(serverArgs("apache/spark:4.3.0"), restart(corev1.RestartPolicyAlways)), ConnectServer, true, ""},
		{"server of an untagged image", driverPod(serverArgs("registry.example.com/spark")), ConnectServer, false, ""},
		{"3.5 server with --packages", driverPod(serverArgs("apache/spark:3.5.9", "--packages", "org.apache.spark:spark-connect_2.12:3.5.9")),
			ConnectServer, false, ""},
		{"3.5 server with --jars", driverPod(serverArgs("apache/spark:3.5.9", "--jars", "local:///opt/jars/spark-connect_2.12-3.5.9.jar")),
			ConnectServer, false, ""},
		{"3.5 server with only the client jar", driverPod(serverArgs("apache/spark:3.5.9", "--jars", "local:///opt/spark-connect-client-jvm_2.12-3.5.9.jar")),
			"", false, "connect-jar"},
		{"start-connect-server.sh", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "apache/spark:4.0.1"
			p.Spec.Containers[0].Command = []string{"/opt/spark/sbin/start-connect-server.sh"}
			p.Spec.Containers[0].Args = nil
		}), ConnectServer, false, ""},
		{"plugin", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.plugins=com.example.P,org.apache.spark.sql.connect.SparkConnectPlugin"}
			p.Spec.Containers[0].Image = "apache/spark:4.3.0"
		}), ConnectPlugin, false, ""},
		{"fixed prefix in a restarting pod", driverPod(restart(corev1.RestartPolicyAlways), serverArgs("apache/spark:4.3.0",
			"--conf", "spark.kubernetes.executor.podNamePrefix=connect")), "", false, "fixed-executor-prefix"},
		{"fixed prefix in a pod that never restarts", driverPod(restart(corev1.RestartPolicyNever), serverArgs("apache/spark:4.3.0",
			"--conf", "spark.kubernetes.executor.podNamePrefix=connect")), ConnectServer, false, ""},
	}
	pol := mustPolicy(t, "")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inject(t, tc.pod, pol)
			var refused *Refused
			if tc.refused != "" {
				if !errors.As(err, &refused) || refused.Reason != tc.refused {
					t.Fatalf("err = %v, want a refusal %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st Status
			if err := json.Unmarshal([]byte(tc.pod.Annotations[vocab.AnnotationStatus]), &st); err != nil {
				t.Fatal(err)
			}
			if st.Connect != tc.connect || st.AppPerJVM != tc.appPerJVM {
				t.Errorf("status connect %q appPerJVM %v, want %q %v", st.Connect, st.AppPerJVM, tc.connect, tc.appPerJVM)
			}
			conf := tc.pod.Annotations[vocab.AnnotationEffectiveConf]
			if got := strings.Contains(conf, "spark.app.id "); got == tc.appPerJVM {
				t.Errorf("effective conf has spark.app.id: %v, want %v", got, !tc.appPerJVM)
			}
			sidecarEnv := ParseSidecarEnv(func(name string) (string, bool) {
				for _, c := range tc.pod.Spec.InitContainers {
					if c.Name == SidecarName {
						if i := envIndex(c.Env, name); i >= 0 {
							return c.Env[i].Value, true
						}
					}
				}
				return "", false
			})
			if sidecarEnv.AppPerJVM != tc.appPerJVM {
				t.Errorf("sidecar env %s: %v, want %v", vocab.EnvAppPerJVM, sidecarEnv.AppPerJVM, tc.appPerJVM)
			}
			foreground := envIndex(tc.pod.Spec.Containers[0].Env, envNoDaemonize) >= 0
			if want := len(tc.pod.Spec.Containers[0].Command) > 0; foreground != want {
				t.Errorf("%s set: %v, want %v", envNoDaemonize, foreground, want)
			}
		})
	}
}

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"apache/spark:3.5.9":                         "3.5.9",
		"apache/spark:3.5.9-scala2.12-java17-ubuntu": "3.5.9",
		"apache/spark:v3.5.4":                        "3.5.4",
		"apache/spark:3.5":                           "3.5.x",
		"registry.example.com:5000/spark:3.5-custom": "3.5.x",
	} {
		if got := imageVersion(image); got != want {
			t.Errorf("imageVersion(%q) = %q, want %q", image, got, want)
		}
	}
}
