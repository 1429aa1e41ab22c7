package patches

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/vocab"
)

// refuseOverwrites refuses a Spark container that sets what sparklet must
// set itself, where keeping the user's value would break the driver or
// its isolation, so that nothing of the user's is silently replaced. What
// sparklet can leave to the user (SPARK_LOCAL_DIRS, HADOOP_CONF_DIR,
// NO_PROXY) is kept instead; see planLocalDirs and addEnv.
func refuseOverwrites(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	for _, name := range []string{vocab.EnvPodName, vocab.EnvPodIP} {
		if _, set := p.userEnv(c, name); set {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"container %q: env %s is reserved for sparklet, which sets it from the downward API; remove it", c.Name, name)}
		}
	}
	if e, set := p.userEnv(c, envBindAddress); set && !isPodIPRef(e) {
		return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
			"container %q: env %s is set by sparklet to the pod IP, which spark.driver.bindAddress reads; remove it", c.Name, envBindAddress)}
	}
	for _, name := range []string{"KUBERNETES_AUTH_TRYKUBECONFIG", "KUBERNETES_AUTH_TRYSERVICEACCOUNT"} {
		if e, set := p.userEnv(c, name); set && (e.ValueFrom != nil || e.Value != "false") {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"container %q: env %s must be \"false\", so that Spark's Kubernetes client sends no credential of its own to the sidecar; remove it", c.Name, name)}
		}
	}
	if e, set := p.userEnv(c, "HADOOP_CONF_DIR"); set && p.pol.HadoopConfigMap != "" {
		p.warn(fmt.Sprintf("container %q: HADOOP_CONF_DIR=%s is the pod's own and kept; the policy's hadoopConfigMap %s is mounted at %s but not read",
			c.Name, envText(e), p.pol.HadoopConfigMap, HadoopConfDir))
	}
	owned := map[string]string{ConfDir: "the Spark configuration", JVMDir: "the JVM's token for the sidecar"}
	if p.pol.HadoopConfigMap != "" {
		owned[HadoopConfDir] = "the policy's hadoopConfigMap"
	}
	if p.fetch != nil {
		owned[spec.MountPath] = "the fetched dependencies"
	}
	for _, cred := range p.pol.CredentialsFor("driver") {
		if cred.MountPath != "" {
			owned[path.Clean(cred.MountPath)] = "the policy's credential " + cred.Name
		}
	}
	for _, m := range c.VolumeMounts {
		what, ok := owned[path.Clean(m.MountPath)]
		if ok && !p.prior.owns(m.Name) && !strings.HasPrefix(m.Name, "sparklet-") {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"container %q: volumeMounts: volume %q is mounted at %s, where sparklet mounts %s; mount it elsewhere", c.Name, m.Name, m.MountPath, what)}
		}
	}
	return nil
}

func isPodIPRef(e corev1.EnvVar) bool {
	return e.Value == "" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
}

// envText shows an env var's value, or where it comes from.
func envText(e corev1.EnvVar) string {
	if e.ValueFrom != nil {
		return "(from valueFrom)"
	}
	return fmt.Sprintf("%q", e.Value)
}
