package patches

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// Env of the Spark container that the effective conf refers to as ${env:...}.
const (
	envBindAddress = "SPARK_DRIVER_BIND_ADDRESS"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// addEnv sets what the JVM needs. The pod's own SPARK_LOCAL_DIRS and
// HADOOP_CONF_DIR are kept; the other names the checks refused, but for
// SPARK_CONF_DIR, whose directory the conf init container copies. The Spark conf refers to the pod name and
// IP through ${env:...}, which Spark resolves for ConfigEntry reads.
func addEnv(pod *corev1.Pod, p *plan, done *Status) error {
	c := p.container(pod)
	own := []corev1.EnvVar{
		fieldEnv(vocab.EnvPodName, "metadata.name"),
		fieldEnv(vocab.EnvPodIP, "status.podIP"),
		fieldEnv(envBindAddress, "status.podIP"),
		{Name: "SPARK_CONF_DIR", Value: ConfDir},
		// fabric8 would otherwise pick up a kubeconfig or a service-account
		// token and send it to the sidecar (spark-fabric8-wire.md, 2g).
		{Name: "KUBERNETES_AUTH_TRYKUBECONFIG", Value: "false"},
		{Name: "KUBERNETES_AUTH_TRYSERVICEACCOUNT", Value: "false"},
	}
	if p.localDirsEnv != "" {
		own = append(own, corev1.EnvVar{Name: "SPARK_LOCAL_DIRS", Value: p.localDirsEnv})
	}
	if _, users := p.userEnv(c, "HADOOP_CONF_DIR"); p.pol.HadoopConfigMap != "" && !users {
		own = append(own, corev1.EnvVar{Name: "HADOOP_CONF_DIR", Value: HadoopConfDir})
	}
	for _, e := range own {
		c.Env = upsert(c.Env, e, envName, true)
		done.Env = append(done.Env, e.Name)
	}
	addNoProxy(c)
	return nil
}

func containsItem(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == item {
			return true
		}
	}
	return false
}
