package patches

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/submitargs"
	"github.com/sparklet/sparklet/policy"
)

// Other routes to the sidecar's token, or around the policy, than the
// token volumes refuseTokens judges.

// refuseHostRoutes refuses the pod-level routes to the sidecar's files:
// the node's process namespace, and a hostPath volume that holds the
// kubelet's pod directory or the node's /proc.
func refuseHostRoutes(pod *corev1.Pod, _ *plan) error {
	if pod.Spec.HostPID {
		return &Refused{Reason: "service-account-token", Message: "spec.hostPID: true is not allowed for Spark drivers: " +
			"every container could read the sidecar's service-account token through /proc/<pid>/root, as with " +
			"shareProcessNamespace; remove hostPID"}
	}
	if i, what := tokenHostPath(pod); what != "" {
		v := pod.Spec.Volumes[i]
		return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
			"spec.volumes[%d] %q: hostPath %s %s, from which a container could read the sparklet sidecar's "+
				"service-account token on the node; mount a narrower host directory, or none", i, v.Name, v.HostPath.Path, what)}
	}
	return nil
}

// tokenHostPath finds the first hostPath volume that reaches the
// service-account tokens on the node (policy.HostPathReaches), and says
// how; what is "" when none does.
func tokenHostPath(pod *corev1.Pod) (i int, what string) {
	for i, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			if what := policy.HostPathReaches(v.HostPath.Path); what != "" {
				return i, what
			}
		}
	}
	return 0, ""
}

// sparkLaunchers are the launchers whose command line starts a Spark
// driver (submitargs.Command.Launcher); "python" is left out, as a Python
// program need not be Spark.
var sparkLaunchers = map[string]bool{
	"driver": true, "spark-submit": true, "pyspark": true, "spark-shell": true,
	"spark-sql": true, "sparkR": true, "run-example": true,
}

// checkOtherContainers judges the containers besides the Spark container
// and sparklet's own: none may mount a volume sparklet gives the Spark
// container (its per-pod JVM token, its configuration), and one that
// starts Spark itself, which sparklet does not configure, must use an
// image the policy allows, so that sparklet.io/container cannot point at a
// decoy while another container runs Spark.
func checkOtherContainers(pod *corev1.Pod, p *plan) error {
	spark := p.container(pod).Name
	for i, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if (i == 1 && c.Name == spark) || (i == 0 && sparkletContainer(c.Name)) {
				continue
			}
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(m.Name, "sparklet-") {
					return &Refused{Reason: "sparklet-volume", Message: fmt.Sprintf(
						"container %q mounts volume %q, which sparklet gives only the Spark container %q; remove the mount",
						c.Name, m.Name, spark)}
				}
			}
			cmd, err := submitargs.Read(c.Command, c.Args)
			if err != nil || !sparkLaunchers[cmd.Launcher] {
				continue
			}
			if err := p.pol.CheckImage(c.Image); err != nil {
				return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf(
					"container %q runs Spark (%s) but is not the Spark container sparklet configures (%q): %v",
					c.Name, cmd.Launcher, spark, err)}
			}
			p.warn(fmt.Sprintf("container %q runs Spark (%s), but sparklet configures only container %q; "+
				"its Spark gets neither the configuration nor a way to the sidecar", c.Name, cmd.Launcher, spark))
		}
	}
	return nil
}

// sparkletContainer tells whether an init container's name is one that
// sparklet injects (refuseReservedNames keeps users from them).
func sparkletContainer(name string) bool {
	return name == SidecarName || name == InitName || name == ConfInitName
}

// sparkPortKeys are the driver's Spark ports: the JVM binds them in the
// pod's network, where the sidecar already listens (Spark then tries the
// next port, and whatever expects the configured one misses it).
var sparkPortKeys = []string{"spark.driver.port", "spark.driver.blockManager.port", "spark.blockManager.port", "spark.ui.port"}

// refuseSidecarPorts refuses a container that declares one of the
// sidecar's ports, and a Spark port the effective configuration sets to
// one: the pod's containers share one network namespace, and the
// sidecar's localhost API and metrics listen there.
func refuseSidecarPorts(pod *corev1.Pod, p *plan) error {
	ports := map[int32]string{
		p.pol.Sidecar.Port:        "its localhost Kubernetes API (the policy's sidecar.port)",
		p.pol.Sidecar.MetricsPort: "its metrics and probes (the policy's sidecar.metricsPort)",
	}
	for _, k := range sparkPortKeys {
		n, err := strconv.ParseInt(strings.TrimSpace(p.conf[k]), 10, 32)
		if what, clash := ports[int32(n)]; err == nil && clash {
			return &Refused{Reason: "sidecar-port", Message: fmt.Sprintf(
				"%s=%d is the sparklet sidecar's port for %s; the pod's containers share one network, "+
					"so set %s to another port, or ask your platform team to move the sidecar's", k, n, what, k)}
		}
	}
	for i, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if i == 0 && c.Name == SidecarName {
				continue
			}
			for _, port := range c.Ports {
				what, clash := ports[port.ContainerPort]
				if !clash || (port.Protocol != "" && port.Protocol != corev1.ProtocolTCP) {
					continue
				}
				return &Refused{Reason: "sidecar-port", Message: fmt.Sprintf(
					"container %q declares port %d, the sparklet sidecar's port for %s; the pod's containers share one network, "+
						"so use another port in that container, or ask your platform team to move the sidecar's",
					c.Name, port.ContainerPort, what)}
			}
		}
	}
	return nil
}
