package patches

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// sidecarHost is where the JVM's Kubernetes client finds the sidecar.
const sidecarHost = "127.0.0.1"

var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// jvmNoProxy keeps the JVM's Kubernetes client off any proxy when it calls
// the sidecar, whatever proxy the image's own env sets: fabric8's
// Config.configFromSysPropsOrEnvVars (v6.7.2, v7.x) takes the proxy from
// the all.proxy/http.proxy system properties or ALL_PROXY/HTTP_PROXY, and
// its no-proxy list from the no.proxy system property before NO_PROXY;
// HttpClientUtils.getProxyUri skips the proxy for a master that list
// matches. The launcher puts spark.driver.defaultJavaOptions on the
// client-mode driver's command line (SparkSubmitCommandBuilder, 3.x and 4.x).
const jvmNoProxy = "-Dno.proxy=" + sidecarHost

// addJVMNoProxy appends jvmNoProxy to spark.driver.defaultJavaOptions,
// keeping what the policy or the pod put there.
func addJVMNoProxy(conf map[string]string) {
	const key = "spark.driver.defaultJavaOptions"
	if opts := strings.TrimSpace(conf[key]); opts != "" {
		conf[key] = opts + " " + jvmNoProxy
		return
	}
	conf[key] = jvmNoProxy
}

// addNoProxy makes NO_PROXY and no_proxy, when the container sets either
// or a proxy, both list the user's exclusions from both plus the sidecar,
// so tools that read either name skip the proxy alike. A value the pod
// takes from elsewhere (valueFrom) moves to SPARKLET_USER_<name>, first in
// the list, and the variable refers to it as $(SPARKLET_USER_<name>),
// which the kubelet expands. A container that sets none of these is left
// alone, so the image's own NO_PROXY stays in force.
func addNoProxy(c *corev1.Container) {
	names := []string{"NO_PROXY", "no_proxy"}
	set := false
	for _, n := range append(append([]string{}, proxyVars...), names...) {
		set = set || hasEnv(c.Env, n)
	}
	if !set {
		return
	}
	var items []string
	add := func(list string) {
		for _, s := range strings.Split(list, ",") {
			if s = strings.TrimSpace(s); s != "" && !containsItem(strings.Join(items, ","), s) {
				items = append(items, s)
			}
		}
	}
	for _, n := range names {
		i := envIndex(c.Env, n)
		switch {
		case i < 0:
		case c.Env[i].ValueFrom != nil:
			moved := c.Env[i]
			moved.Name = vocab.EnvUserPrefix + n
			c.Env = append([]corev1.EnvVar{moved}, append(c.Env[:i:i], c.Env[i+1:]...)...)
			c.Env = upsert(c.Env, corev1.EnvVar{Name: n}, envName, false)
			add("$(" + moved.Name + ")")
		default:
			add(c.Env[i].Value)
		}
	}
	add(sidecarHost)
	for _, n := range names {
		c.Env = upsert(c.Env, corev1.EnvVar{Name: n, Value: strings.Join(items, ",")}, envName, true)
	}
}
