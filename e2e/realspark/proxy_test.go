package realspark

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/hack/spark"
)

// TestProxyNeverSeesTheSidecarTraffic runs SparkPi behind a proxy that
// refuses every connection (port 9 on the pod's own loopback), set where
// the webhook cannot read it, as it cannot read an image's own env.
// fabric8 sends an http master through the http.proxy system property or
// HTTP_PROXY/ALL_PROXY unless its no-proxy list (the no.proxy system
// property, else NO_PROXY) matches the host (Config.configFromSysPropsOrEnvVars
// and HttpClientUtils.getProxyUri, v6.7.2 and v7.x): the job completes
// only if the JVM skips the proxy for the sidecar.
//   - On the oldest version, HTTP_PROXY, ALL_PROXY and a NO_PROXY without
//     127.0.0.1 come from a ConfigMap: the webhook completes NO_PROXY
//     through $(SPARKLET_USER_NO_PROXY).
//   - On the newest, JAVA_TOOL_OPTIONS sets -Dhttp.proxy and a -Dno.proxy
//     without 127.0.0.1, which no env rule can see: only the
//     -Dno.proxy=127.0.0.1 that sparklet puts in
//     spark.driver.defaultJavaOptions, later on the JVM's command line,
//     keeps the JVM off the proxy.
func TestProxyNeverSeesTheSidecarTraffic(t *testing.T) {
	ds := failureDists(t)
	runProxied(t, ds[0], "configmap", func(c *corev1.Container) {
		ref := func(key string) *corev1.EnvVarSource {
			return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}, Key: key}}
		}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "HTTP_PROXY", ValueFrom: ref("http-proxy")},
			corev1.EnvVar{Name: "ALL_PROXY", ValueFrom: ref("http-proxy")},
			corev1.EnvVar{Name: "NO_PROXY", ValueFrom: ref("no-proxy")})
	}, "$(SPARKLET_USER_NO_PROXY),127.0.0.1")
	runProxied(t, ds[len(ds)-1], "java-tool-options", func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "JAVA_TOOL_OPTIONS",
			Value: "-Dhttp.proxy=http://127.0.0.1:9 -Dall.proxy=http://127.0.0.1:9 -Dno.proxy=.example.internal"})
	}, "")
}

// runProxied runs SparkPi on d with the Spark container changed by proxied,
// and checks the NO_PROXY the webhook left it.
func runProxied(t *testing.T, d spark.Dist, name string, proxied func(*corev1.Container), wantNoProxy string) {
	t.Run(d.Version+"/"+name, func(t *testing.T) {
		ns := namespace(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proxy"},
			Data: map[string]string{"http-proxy": "http://127.0.0.1:9", "no-proxy": ".example.internal"}}
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := yaml.Unmarshal(example(t, "spark-pi-pod.yaml", d), &pod); err != nil {
			t.Fatal(err)
		}
		proxied(&pod.Spec.Containers[0])
		manifest, err := yaml.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		kubectl(t, manifest, "apply", "-n", ns, "-f", "-")

		done := waitPod(t, ns, pod.Name, "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
		if done.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, pod.Name))
		}
		if pi := piValue(t, log(ns, pod.Name, "spark")); math.Abs(pi-math.Pi) > 0.01 {
			t.Errorf("Pi is roughly %v: more than 0.01 away from π", pi)
		}
		noProxy := ""
		for _, e := range done.Spec.Containers[0].Env {
			if e.Name == "NO_PROXY" {
				noProxy = e.Value
			}
		}
		if noProxy != wantNoProxy {
			t.Errorf("NO_PROXY = %q, want %q", noProxy, wantNoProxy)
		}
		_ = env.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	})
}
