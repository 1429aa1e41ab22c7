package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/vocab"
)

// showInjected prints what the webhook added to a driver pod.
func showInjected(pod *corev1.Pod) {
	var st patches.Status
	_ = json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st)
	say("sparklet.io/status: version %s, application id %s, Spark container %q", st.Version, st.AppID, st.SparkContainer)
	fmt.Println()
	say("The init containers: the sidecar as a native sidecar (starts before the JVM, never holds up the pod's completion), then the conf init container, a native sidecar too, whose postStart hook holds the JVM back until the sidecar listens and the conf is written:")
	for _, c := range pod.Spec.InitContainers {
		policy := "-"
		if c.RestartPolicy != nil {
			policy = string(*c.RestartPolicy)
		}
		probe := "none"
		if c.StartupProbe != nil && c.StartupProbe.HTTPGet != nil {
			probe = fmt.Sprintf("GET %s :%s", c.StartupProbe.HTTPGet.Path, c.StartupProbe.HTTPGet.Port.String())
		}
		say("  initContainer %-18s image %s  restartPolicy %s  startupProbe %s", c.Name, c.Image, policy, probe)
	}
	fmt.Println()
	say("Volumes sparklet added:")
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, name := range st.Volumes {
		say("  %-20s %s", name, describeVolume(vols[name]))
	}
	fmt.Println()
	say("Credentials:")
	say("  automountServiceAccountToken: %v", *pod.Spec.AutomountServiceAccountToken)
	for _, v := range st.RemovedVolumes {
		say("  removed %s: the API server's token volume, which every container would have mounted", v)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		has := "no Kubernetes credential"
		for _, m := range c.VolumeMounts {
			if m.MountPath == patches.ServiceAccount {
				has = "service-account token at " + m.MountPath
			}
			if m.MountPath == patches.JVMDir && c.Name != patches.SidecarName {
				has = "no Kubernetes credential; a per-pod token for the sidecar only, at " + patches.TokenFile
			}
		}
		say("  %-18s %s", c.Name, has)
	}
	fmt.Println()
	say("Effective Spark configuration (annotation sparklet.io/effective-conf, read by the JVM as spark-defaults.conf):")
	conf, _ := patches.EffectiveConf(pod.Annotations)
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		say("  %-48s %s", k, conf[k])
	}
	fmt.Println()
	say("Env added to the Spark container: %s", strings.Join(st.Env, ", "))
	if p := verify.Driver(pod); len(p) > 0 {
		say("problems: %v", p)
	}
}

func describeVolume(v corev1.Volume) string {
	switch {
	case v.DownwardAPI != nil:
		return "downward API: the effective Spark conf, for the init containers"
	case v.Name == patches.VolumeSpark:
		return "emptyDir: SPARK_CONF_DIR (" + patches.ConfDir + "), the image's conf directory with the effective conf appended to its " + patches.ConfFile
	case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
		return "in-memory emptyDir: the JVM's token for the sidecar"
	case v.EmptyDir != nil:
		return "emptyDir: Spark scratch space (SPARK_LOCAL_DIRS)"
	case v.Projected != nil:
		return "projected service-account token, mounted only into the sidecar"
	case v.Secret != nil:
		return "Secret " + v.Secret.SecretName
	case v.ConfigMap != nil:
		return "ConfigMap " + v.ConfigMap.Name
	}
	return ""
}
