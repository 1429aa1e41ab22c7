package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

// TestMeshExclusions: the sidecar's metrics port always, and the API
// server's addresses when the policy knows them, join what the pod lists.
func TestMeshExclusions(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		pod          map[string]string
		want         map[string]string
	}{
		{"defaults", "limits: {}\n", nil, map[string]string{
			IstioExcludeInboundPorts: "7444", LinkerdSkipInboundPorts: "7444", IstioExcludeOutboundIPRanges: "", LinkerdSkipSubnets: ""}},
		{"api server known", "mesh: {apiServerCIDRs: [10.96.0.1/32]}\nsidecar: {metricsPort: 9000}\n", nil, map[string]string{
			IstioExcludeInboundPorts: "9000", LinkerdSkipInboundPorts: "9000",
			IstioExcludeOutboundIPRanges: "10.96.0.1/32", LinkerdSkipSubnets: "10.96.0.1/32"}},
		{"kept and merged", "mesh: {apiServerCIDRs: [10.96.0.1/32]}\n", map[string]string{
			IstioExcludeInboundPorts: "*", LinkerdSkipInboundPorts: "4191, 7444",
			IstioExcludeOutboundIPRanges: "169.254.169.254/32", LinkerdSkipSubnets: "10.0.0.0/8"}, map[string]string{
			IstioExcludeInboundPorts: "*", LinkerdSkipInboundPorts: "4191,7444",
			IstioExcludeOutboundIPRanges: "169.254.169.254/32,10.96.0.1/32", LinkerdSkipSubnets: "10.0.0.0/8,10.96.0.1/32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) { p.Annotations = tc.pod })
			if _, err := inject(t, pod, mustPolicy(t, tc.policy)); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := pod.Annotations[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestMeshProxyIsNotTheSparkContainer: a mesh's proxy container, added by
// a webhook that ran before sparklet's, leaves one candidate.
func TestMeshProxyIsNotTheSparkContainer(t *testing.T) {
	for _, names := range [][]string{{"main", "istio-proxy"}, {"linkerd-proxy", "job"}} {
		pod := driverPod(func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			p.Spec.Containers = nil
			for _, n := range names {
				c.Name = n
				p.Spec.Containers = append(p.Spec.Containers, c)
			}
		})
		if _, err := inject(t, pod, mustPolicy(t, "limits: {}\n")); err != nil {
			t.Errorf("%v: %v", names, err)
		}
	}
	two := driverPod(func(p *corev1.Pod) {
		c := p.Spec.Containers[0]
		c.Name = "app" // neither is a name sparklet knows (spark, Airflow's base, Argo's main)
		other := c
		other.Name = "helper"
		p.Spec.Containers = []corev1.Container{c, other, {Name: "istio-proxy", Image: "istio/proxyv2"}}
	})
	if _, err := inject(t, two, mustPolicy(t, "limits: {}\n")); err == nil {
		t.Error("two candidates besides the proxy were not refused")
	}
}

func TestMeshPolicyValidation(t *testing.T) {
	_, err := policy.Parse([]byte("mesh: {apiServerCIDRs: [10.96.0.1]}\n"), "dev")
	if err == nil || !strings.Contains(err.Error(), "mesh.apiServerCIDRs[0]") {
		t.Errorf("a bare IP: %v, want an error naming mesh.apiServerCIDRs[0]", err)
	}
}
