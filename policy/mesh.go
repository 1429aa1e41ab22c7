package policy

import (
	"net/netip"
	"strconv"
)

// Mesh tells the webhook what a service mesh's proxy in the driver pod
// must leave alone (docs/meshes.md).
type Mesh struct {
	// APIServerCIDRs are the API server's addresses as the pod dials them
	// (the kubernetes Service's ClusterIP, /32): the sidecar's API traffic
	// bypasses the mesh's proxy, which may not run yet when the sidecar
	// starts. The chart fills in the ClusterIP when it can look it up.
	APIServerCIDRs []string `json:"apiServerCIDRs,omitempty"`
}

func (v *validator) mesh(at string, m Mesh) {
	for i, c := range m.APIServerCIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			v.add(at+".apiServerCIDRs["+strconv.Itoa(i)+"]", "%q is not a CIDR such as 10.96.0.1/32", c)
		}
	}
}
