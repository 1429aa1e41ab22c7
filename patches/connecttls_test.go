package patches

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestConnectTLS: with the policy's connect.tlsSecretName a Connect server
// on Spark 4.0+ gets the Secret as a volume that only the sidecar mounts,
// and the sidecar the env that serves TLS; injecting twice changes
// nothing. A driver that is no Connect server gets neither; a 3.5 server
// neither, with a warning that names the Secret.
func TestConnectTLS(t *testing.T) {
	server := func(image string) *corev1.Pod {
		return driverPod(func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = []string{"driver", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
				"--jars", "local:///opt/jars/spark-connect_2.12-3.5.9.jar"}
		})
	}
	pol := mustPolicy(t, "connect: {tlsSecretName: connect-tls}\n")

	pod := server("apache/spark:4.3.0")
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("err %v, warnings %q", err, res.Warnings)
	}
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == VolumeConnectTLS {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "connect-tls" || vol.Secret.Optional != nil {
		t.Fatalf("volume %s: %+v, want the Secret connect-tls, not optional", VolumeConnectTLS, vol)
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.Name == VolumeConnectTLS {
				mounted = m.MountPath == ConnectTLSDir && m.ReadOnly
			}
		}
		if mounted != (c.Name == SidecarName) {
			t.Errorf("container %s mounts the TLS Secret read-only at %s: %v; only the sidecar may", c.Name, ConnectTLSDir, mounted)
		}
		if c.Name == SidecarName && envValue(c.Env, vocab.EnvConnectTLSDir) != ConnectTLSDir {
			t.Errorf("sidecar %s = %q, want %s", vocab.EnvConnectTLSDir, envValue(c.Env, vocab.EnvConnectTLSDir), ConnectTLSDir)
		}
	}
	once := pod.DeepCopy()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(once, pod) {
		t.Error("a second injection changed the pod")
	}

	for name, p := range map[string]*corev1.Pod{"SparkPi": driverPod(), "3.5 server": server("apache/spark:3.5.9")} {
		if _, err := Driver(p, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"}); err != nil {
			t.Fatal(err)
		}
		has := false
		for _, v := range p.Spec.Volumes {
			has = has || v.Name == VolumeConnectTLS
		}
		if want := name == "3.5 server"; has != want {
			t.Errorf("%s: has the TLS volume %v, want %v", name, has, want)
		}
	}
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
