package patches

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// testPolicy puts credentials, limits and enforced values in play; the
// verify package's test reads the same file.
var testPolicy = func() string {
	data, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		panic(err)
	}
	return string(data)
}()

func mustPolicy(t testing.TB, text string) *policy.Effective {
	t.Helper()
	p, err := policy.Parse([]byte(text), "dev")
	if err != nil {
		t.Fatal(err)
	}
	return p.For("spark-jobs")
}

func driverPod(mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Labels: map[string]string{vocab.LabelRole: "driver"}},
		// A driver runs as a ServiceAccount of its own, which its
		// executors (default) never share.
		Spec: corev1.PodSpec{ServiceAccountName: "spark-driver", Containers: []corev1.Container{{
			Name: "spark", Image: "apache/spark:3.5.4",
			Args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar"},
		}}},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func inject(t *testing.T, pod *corev1.Pod, pol *policy.Effective) (string, error) {
	t.Helper()
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if res.Skipped != nil {
		return res.Skipped.Reason, err
	}
	return "", err
}

func TestDriverInjects(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	pod := driverPod()
	if skipped, err := inject(t, pod, pol); err != nil || skipped != "" {
		t.Fatalf("skipped=%q err=%v", skipped, err)
	}
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"spark.master":                                 "k8s://http://127.0.0.1:7443",
		"spark.kubernetes.namespace":                   "spark-jobs",
		"spark.app.id":                                 "spark-test",
		"spark.kubernetes.container.image":             "apache/spark:3.5.4",
		"spark.eventLog.enabled":                       "true",
		"spark.executor.instances":                     "2",
		"spark.kubernetes.driver.pod.name":             "${env:SPARKLET_POD_NAME}",
		"spark.kubernetes.authenticate.oauthTokenFile": TokenFile,
	}
	for k, v := range want {
		if conf[k] != v {
			t.Errorf("conf %s = %q, want %q", k, conf[k], v)
		}
	}
	if pod.Labels[vocab.LabelAppID] != "spark-test" || pod.Labels["cost-center"] != "data" {
		t.Errorf("labels = %v", pod.Labels)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken = %v, want false", a)
	}
	if pod.Spec.ServiceAccountName != "spark-driver" {
		t.Errorf("serviceAccountName = %q", pod.Spec.ServiceAccountName)
	}
	if n := len(pod.Spec.InitContainers); n != 2 || pod.Spec.InitContainers[0].Name != SidecarName || pod.Spec.InitContainers[1].Name != ConfInitName {
		t.Fatalf("init containers = %v", pod.Spec.InitContainers)
	}
	sc := pod.Spec.InitContainers[0]
	if sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar is not a native sidecar: %+v", sc)
	}
	if sc.StartupProbe != nil {
		t.Errorf("sidecar has a startup probe, which would hold the JVM back by up to its period: %+v", sc.StartupProbe)
	}
	spark := pod.Spec.Containers[0]
	for _, m := range spark.VolumeMounts {
		if m.Name == VolumeToken || m.MountPath == ServiceAccount {
			t.Errorf("the Spark container must not mount the service-account token: %+v", m)
		}
	}
	if !hasMount(sc.VolumeMounts, VolumeToken) {
		t.Errorf("sidecar lacks the token mount")
	}
	for _, e := range []string{"SPARK_DRIVER_BIND_ADDRESS", "SPARK_CONF_DIR", "KUBERNETES_AUTH_TRYKUBECONFIG", "AWS_ACCESS_KEY_ID", "TEAM", "SPARK_LOCAL_DIRS"} {
		if !hasEnv(spark.Env, e) {
			t.Errorf("Spark container lacks env %s", e)
		}
	}
	if !reflect.DeepEqual(spark.Args, driverPod().Spec.Containers[0].Args) {
		t.Errorf("args changed: %v", spark.Args)
	}
}

func hasMount(ms []corev1.VolumeMount, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

func TestDriverIdempotent(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for name, pod := range map[string]*corev1.Pod{
		"minimal": driverPod(),
		"user env wins": driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TEAM", Value: "mine"}, {Name: "HTTP_PROXY", Value: "http://proxy:3128"}}
		}),
		"fetch": driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"sparklet.io/fetch": "https://repo.example.com/app.jar"}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := inject(t, pod, pol); err != nil {
				t.Fatal(err)
			}
			once := pod.DeepCopy()
			if _, err := inject(t, pod, pol); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(once, pod) {
				t.Errorf("second injection changed the pod")
			}
		})
	}
}

func TestUserEnvWins(t *testing.T) {
	pod := driverPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TEAM", Value: "mine"}, {Name: "AWS_ACCESS_KEY_ID", Value: "own"}}
	})
	if _, err := inject(t, pod, mustPolicy(t, testPolicy)); err != nil {
		t.Fatal(err)
	}
	env := pod.Spec.Containers[0].Env
	if env[envIndex(env, "TEAM")].Value != "mine" || env[envIndex(env, "AWS_ACCESS_KEY_ID")].Value != "own" {
		t.Errorf("user env replaced: %v", env)
	}
}

func TestDriverRefusals(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	cases := []struct {
		name, reason, mention string
		pod                   *corev1.Pod
	}{
		{"host network", "host-network", "hostNetwork", driverPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{"image", "image-not-allowed", "apache/spark:*", driverPod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil/spark:1" })},
		{"driver cpu", "over-limit", "limits.driver.maxCores", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}
		})},
		{"instances", "over-limit", "limits.maxExecutors=20", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.executor.instances 50"}
		})},
		{"executor memory", "over-limit", "limits.executor.maxMemory", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.executor.memory=40g"}
		})},
		{"enforced in args", "enforced-key", "spark.eventLog.enabled", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Args = append([]string{"driver", "--conf", "spark.eventLog.enabled=false"}, p.Spec.Containers[0].Args[1:]...)
		})},
		{"master in args", "reserved-key", "--master", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Args = append([]string{"driver", "--master", "local[*]"}, p.Spec.Containers[0].Args[1:]...)
		})},
		{"two containers", "no-spark-container", `["app", "sidecar"]`, driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Name = "app"
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
		})},
		{"conf dir", "spark-conf-dir", "SPARK_CONF_DIR", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SPARK_CONF_DIR", Value: "/opt/sparklet/conf/"}}
		})},
		{"relative conf dir", "spark-conf-dir", "SPARK_CONF_DIR", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SPARK_CONF_DIR", Value: "conf"}}
		})},
		{"bad annotation", "bad-spark-conf", "line 1", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.a=\\u12"}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inject(t, tc.pod, pol)
			var r *Refused
			if !errors.As(err, &r) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if r.Reason != tc.reason || !strings.Contains(r.Message, tc.mention) {
				t.Errorf("refusal = %s: %s; want reason %s mentioning %q", r.Reason, r.Message, tc.reason, tc.mention)
			}
		})
	}
}

func TestDriverSkips(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for name, pod := range map[string]*corev1.Pod{
		"opted out": driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationInject: "false"} }),
		"executor":  driverPod(func(p *corev1.Pod) { p.Labels[vocab.LabelRole] = "executor" }),
	} {
		before := pod.DeepCopy()
		skipped, err := inject(t, pod, pol)
		if err != nil || skipped == "" {
			t.Errorf("%s: skipped=%q err=%v", name, skipped, err)
		}
		if !reflect.DeepEqual(before, pod) {
			t.Errorf("%s: skipped pod was changed", name)
		}
	}
}

// TestPolicyDefaultsUnderEnforced: a policy default that an enforced value
// overrides is not a refusal, and the enforced value wins.
func TestPolicyDefaultsUnderEnforced(t *testing.T) {
	pol := mustPolicy(t, "spark:\n  defaults: {spark.eventLog.enabled: \"false\"}\n  enforced: {spark.eventLog.enabled: \"true\"}\n")
	pod := driverPod()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil || conf["spark.eventLog.enabled"] != "true" {
		t.Errorf("spark.eventLog.enabled = %q (%v), want the enforced true", conf["spark.eventLog.enabled"], err)
	}
}
