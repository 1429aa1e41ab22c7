package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestConnectAuth: a Connect server on Spark 4.0+ binds the JVM to
// 127.0.0.1:ConnectJVMPort, the sidecar serves ConnectPort and the conf
// init container exports the sidecar's token; a user who sets one of those
// keys is refused naming it; a 3.5 server's JVM moves to ConnectJVMPort on
// every address, behind the sidecar without a token, with a warning.
func TestConnectAuth(t *testing.T) {
	server := func(image string, args ...string) *corev1.Pod {
		return driverPod(func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = append([]string{"driver", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
				"--jars", "local:///opt/jars/spark-connect_2.12-3.5.9.jar"}, args...)
		})
	}
	pol := mustPolicy(t, "")

	pod := server("apache/spark:4.3.0")
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	conf := pod.Annotations[vocab.AnnotationEffectiveConf]
	for _, want := range []string{"spark.connect.grpc.binding.address 127.0.0.1\n", "spark.connect.grpc.binding.port 15102\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("effective conf lacks %q:\n%s", want, conf)
		}
	}
	env, confScript := connectInitContainers(pod)
	if env[vocab.EnvConnectListen] != ":15002" || env[vocab.EnvConnectBackend] != "127.0.0.1:15102" || env[vocab.EnvConnectNoToken] != "" {
		t.Errorf("sidecar env %s=%q %s=%q, want :15002 and 127.0.0.1:15102", vocab.EnvConnectListen, env[vocab.EnvConnectListen],
			vocab.EnvConnectBackend, env[vocab.EnvConnectBackend])
	}
	if !strings.Contains(confScript, "SPARK_CONNECT_AUTHENTICATE_TOKEN=$(cat "+ConnectTokenFile+")") || !strings.Contains(confScript, `"$dst/spark-env.sh"`) {
		t.Errorf("the conf init container does not export the sidecar's token from spark-env.sh:\n%s", confScript)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %q", res.Warnings)
	}

	for _, key := range []string{"spark.connect.grpc.binding.address", "spark.connect.grpc.binding.port", "spark.connect.authenticate.token"} {
		_, err := inject(t, server("apache/spark:4.3.0", "--conf", key+"=secret"), pol)
		var refused *Refused
		if !errors.As(err, &refused) || !strings.Contains(refused.Message, key) {
			t.Errorf("%s set: err = %v, want a refusal naming it", key, err)
		} else if key == "spark.connect.authenticate.token" && strings.Contains(refused.Message, "secret") {
			t.Errorf("the refusal shows the token: %s", refused.Message)
		}
	}

	old := server("apache/spark:3.5.9")
	res, err = Driver(old, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	conf = old.Annotations[vocab.AnnotationEffectiveConf]
	if !strings.Contains(conf, "spark.connect.grpc.binding.port 15102\n") || strings.Contains(conf, "spark.connect.grpc.binding.address") {
		t.Errorf("a 3.5 server's conf, want its Connect port moved to 15102 and no binding address (3.5 has none):\n%s", conf)
	}
	oldEnv, oldScript := connectInitContainers(old)
	if strings.Contains(oldScript, "SPARK_CONNECT_AUTHENTICATE_TOKEN") {
		t.Errorf("the conf init container of a 3.5 server exports a token its JVM does not check:\n%s", oldScript)
	}
	if oldEnv[vocab.EnvConnectListen] != ":15002" || oldEnv[vocab.EnvConnectBackend] != "127.0.0.1:15102" || oldEnv[vocab.EnvConnectNoToken] != "true" {
		t.Errorf("a 3.5 server's sidecar env %v, want it to serve :15002 and forward to 127.0.0.1:15102 without a token", oldEnv)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "Spark 3.5.9 Connect server binds port 15102 on every address of the pod and checks no token") ||
		!strings.Contains(res.Warnings[0], "NetworkPolicy") {
		t.Errorf("warnings %q, want the 3.5 one", res.Warnings)
	}
	if _, err := inject(t, server("apache/spark:3.5.9", "--conf", "spark.connect.grpc.binding.port=15002"), pol); err == nil {
		t.Error("a 3.5 server that sets spark.connect.grpc.binding.port was admitted")
	}
}

// connectInitContainers is the sidecar's env and the conf init
// container's command of an injected pod.
func connectInitContainers(pod *corev1.Pod) (sidecarEnv map[string]string, confScript string) {
	sidecarEnv = map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		switch c.Name {
		case SidecarName:
			for _, e := range c.Env {
				sidecarEnv[e.Name] = e.Value
			}
		case ConfInitName:
			confScript = strings.Join(c.Command, " ")
		}
	}
	return sidecarEnv, confScript
}
