package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// Driver checks that a stored pod carries everything the driver
// injection promises. Tests use it on golden files and on pods read back
// from a real API server; it returns every problem it finds.
func Driver(pod *corev1.Pod) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	var st patches.Status
	if err := json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st); err != nil {
		bad("annotation %s: %v", vocab.AnnotationStatus, err)
	}
	if pod.Labels[vocab.LabelAppID] == "" || pod.Labels[vocab.LabelAppID] != st.AppID {
		bad("label %s=%q does not match the status app id %q", vocab.LabelAppID, pod.Labels[vocab.LabelAppID], st.AppID)
	}
	conf, err := patches.EffectiveConf(pod.Annotations)
	if err != nil {
		bad("annotation %s: %v", vocab.AnnotationEffectiveConf, err)
	}
	if !strings.HasPrefix(conf["spark.master"], "k8s://http://127.0.0.1:") {
		bad("spark.master = %q, want the sidecar on 127.0.0.1", conf["spark.master"])
	}
	want := st.AppID
	if st.AppPerJVM { // Spark picks each JVM's
		want = ""
	}
	if conf["spark.app.id"] != want {
		bad("spark.app.id = %q, want %q", conf["spark.app.id"], want)
	}
	if conf["spark.kubernetes.namespace"] == "" || conf["spark.kubernetes.driver.pod.name"] == "" {
		bad("namespace or driver pod name missing from the effective conf")
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		bad("spec.automountServiceAccountToken must be false")
	}
	if pod.Spec.HostNetwork {
		bad("spec.hostNetwork is true")
	}

	var sidecar *corev1.Container
	sidecarAt, confAt := -1, -1
	for i := range pod.Spec.InitContainers {
		switch pod.Spec.InitContainers[i].Name {
		case patches.SidecarName:
			sidecar, sidecarAt = &pod.Spec.InitContainers[i], i
		case patches.ConfInitName:
			confAt = i
		}
	}
	switch {
	case sidecar == nil:
		bad("no %s init container", patches.SidecarName)
	case sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways:
		bad("%s is not a native sidecar (restartPolicy: Always)", patches.SidecarName)
	case !mountsVolume(*sidecar, patches.VolumeToken):
		bad("%s does not mount the service-account token", patches.SidecarName)
	case sidecar.StartupProbe == nil && (confAt < sidecarAt || !holdsTheJVM(pod.Spec.InitContainers[confAt])):
		// Without a startup probe, the conf init container after it is what
		// holds the JVM back until the sidecar serves.
		bad("%s has no startup probe and no %s after it whose postStart hook waits for it", patches.SidecarName, patches.ConfInitName)
	}

	var spark *corev1.Container
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name == st.SparkContainer {
			spark = c
		}
		kept := c.Name != st.SparkContainer && slices.Contains(st.TokenContainers, c.Name)
		if !kept && (mountsVolume(*c, patches.VolumeToken) || mountsPath(*c, patches.ServiceAccount)) {
			bad("container %q can read the service-account token", c.Name)
		}
	}
	if spark == nil {
		bad("Spark container %q not found", st.SparkContainer)
		return problems
	}
	for _, e := range []string{"SPARK_CONF_DIR", "SPARK_DRIVER_BIND_ADDRESS", "SPARKLET_POD_NAME", "SPARKLET_POD_IP", "KUBERNETES_AUTH_TRYKUBECONFIG"} {
		if !hasEnv(spark.Env, e) {
			bad("Spark container lacks env %s", e)
		}
	}
	for _, v := range []string{patches.VolumeSpark, patches.VolumeJVM} {
		if !mountsVolume(*spark, v) {
			bad("Spark container does not mount %s", v)
		}
	}
	vols := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = true
	}
	for _, v := range st.Volumes {
		if !vols[v] {
			bad("status lists volume %s, which the pod lacks", v)
		}
	}
	return problems
}

func mountsVolume(c corev1.Container, name string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == name {
			return true
		}
	}
	return false
}

func mountsPath(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// holdsTheJVM reports whether the conf init container holds the JVM back
// until the sidecar serves: it sees the sidecar's serving file and, as a
// native sidecar, has a postStart hook that the kubelet waits for.
func holdsTheJVM(conf corev1.Container) bool {
	return mountsVolume(conf, patches.VolumeJVM) && conf.RestartPolicy != nil && *conf.RestartPolicy == corev1.ContainerRestartPolicyAlways &&
		conf.Lifecycle != nil && conf.Lifecycle.PostStart != nil && conf.Lifecycle.PostStart.Exec != nil
}
