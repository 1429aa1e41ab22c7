package patches

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations of the Istio and Linkerd injectors that sparklet sets on
// every driver pod, so that a mesh's proxy does not stand between the
// sidecar and what it must reach before the proxy runs (docs/meshes.md):
//   - the kubelet's probes and Prometheus reach the sidecar's metrics port
//     directly;
//   - the sidecar reaches the API server directly (policy
//     mesh.apiServerCIDRs).
//
// The names are Istio's traffic.sidecar.istio.io annotations and
// Linkerd's documented config.linkerd.io proxy annotations (which
// linkerd-cni also reads).
//
// The JVM's calls to the sidecar on 127.0.0.1 are never captured: both
// meshes' iptables rules return loopback traffic.
const (
	IstioExcludeInboundPorts     = "traffic.sidecar.istio.io/excludeInboundPorts"
	IstioExcludeOutboundIPRanges = "traffic.sidecar.istio.io/excludeOutboundIPRanges"
	LinkerdSkipInboundPorts      = "config.linkerd.io/skip-inbound-ports"
	LinkerdSkipSubnets           = "config.linkerd.io/skip-subnets"
)

// meshExclusions adds the sidecar's metrics port and the API server's
// addresses to the meshes' exclusion lists, keeping what the pod lists.
func meshExclusions(pod *corev1.Pod, p *plan, _ *Status) error {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	port := strconv.Itoa(int(p.pol.Sidecar.MetricsPort))
	addToList(pod.Annotations, IstioExcludeInboundPorts, port)
	addToList(pod.Annotations, LinkerdSkipInboundPorts, port)
	if cidrs := p.pol.Mesh.APIServerCIDRs; len(cidrs) > 0 {
		addToList(pod.Annotations, IstioExcludeOutboundIPRanges, cidrs...)
		addToList(pod.Annotations, LinkerdSkipSubnets, cidrs...)
	}
	return nil
}

// addToList appends the values missing from the comma-separated list in
// annotation key. A list of "*" (Istio: every port) already holds them.
func addToList(annotations map[string]string, key string, values ...string) {
	var list []string
	for _, v := range strings.Split(annotations[key], ",") {
		if v = strings.TrimSpace(v); v != "" {
			list = append(list, v)
		}
	}
	if slices.Contains(list, "*") {
		return
	}
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	annotations[key] = strings.Join(list, ",")
}

// meshProxies are the containers Istio and Linkerd add to a pod when their
// proxy is not a native sidecar. Their webhooks may run before sparklet's.
var meshProxies = []string{"istio-proxy", "linkerd-proxy"}

// onlyAppContainer is the index of the one container that is not a mesh's
// proxy, if there is exactly one.
func onlyAppContainer(cs []corev1.Container) (int, bool) {
	found := -1
	for i := range cs {
		if slices.Contains(meshProxies, cs[i].Name) {
			continue
		}
		if found >= 0 {
			return 0, false
		}
		found = i
	}
	return found, found >= 0
}
