package policy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// GRPCRoute has the sidecar of a Connect server create a Gateway API
// GRPCRoute "<server>-connect" to the server's Service (docs/connect.md):
// which Gateways it attaches to, and the hostnames it answers for.
type GRPCRoute struct {
	// ParentRefs are the Gateways, and optionally their listeners, the
	// route attaches to.
	ParentRefs []GatewayRef `json:"parentRefs"`
	// Hostnames are templates of the hostnames the route matches, in
	// which {{SERVER}} and {{NAMESPACE}} are the server's name and
	// namespace; none: the listener's.
	Hostnames []string `json:"hostnames,omitempty"`
}

// GatewayRef names a Gateway: in the server's namespace unless Namespace
// is set, and one of its listeners when SectionName is.
type GatewayRef struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace,omitempty"`
	SectionName string `json:"sectionName,omitempty"`
}

// RouteHostnames are Hostnames with the server's name and namespace put
// in.
func (r GRPCRoute) RouteHostnames(server, namespace string) []string {
	replace := strings.NewReplacer("{{SERVER}}", server, "{{NAMESPACE}}", namespace)
	out := make([]string, len(r.Hostnames))
	for i, h := range r.Hostnames {
		out[i] = replace.Replace(h)
	}
	return out
}

// CheckRouteHostname tells what is wrong with a hostname of a GRPCRoute,
// or nil: a DNS name of labels of 63 characters at most, optionally
// behind one "*." wildcard label, as the Gateway API's Hostname type
// allows.
func CheckRouteHostname(h string) error {
	name := strings.TrimPrefix(h, "*.")
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	for _, label := range strings.Split(name, ".") {
		if msgs := validation.IsDNS1123Label(label); len(msgs) > 0 {
			return fmt.Errorf("label %q: %s", label, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// grpcRoute checks r; service is the same level's connect.service.
func (v *validator) grpcRoute(at string, r *GRPCRoute, service *bool) {
	if r == nil {
		return
	}
	if service != nil && !*service {
		v.add(at, "routes to the Service that connect.service: false turns off; set service: true or remove grpcRoute")
	}
	if len(r.ParentRefs) == 0 {
		v.add(at+".parentRefs", "is required: name the Gateway, e.g. [{name: spark-gateway, namespace: gateways}]")
	}
	for i, p := range r.ParentRefs {
		field := fmt.Sprintf("%s.parentRefs[%d]", at, i)
		if p.Name == "" {
			v.add(field+".name", "is required: the Gateway's name")
		} else {
			v.dnsSubdomain(field+".name", p.Name)
		}
		if p.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(p.Namespace) {
				v.add(field+".namespace", "%q: %s", p.Namespace, msg)
			}
		}
		if p.SectionName != "" {
			v.dnsSubdomain(field+".sectionName", p.SectionName)
		}
	}
	example := r.RouteHostnames("spark-connect", "namespace")
	for i, h := range r.Hostnames {
		if err := CheckRouteHostname(example[i]); err != nil {
			v.add(fmt.Sprintf("%s.hostnames[%d]", at, i), "%q does not give a DNS name (%v); use {{SERVER}} and {{NAMESPACE}} in a name such as \"{{SERVER}}.{{NAMESPACE}}.connect.example.com\"", h, err)
		}
	}
}
