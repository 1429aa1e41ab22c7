package policy

import "k8s.io/apimachinery/pkg/util/validation"

// ConnectAccess is what a Spark Connect client's Kubernetes identity must
// be allowed to do for the sidecar to admit it: a SubjectAccessReview of
// Verb on Resource in Group, in the server's namespace
// (docs/connect.md). Resource needs to exist in no API: RBAC grants it
// all the same.
type ConnectAccess struct {
	Verb     string `json:"verb,omitempty"`
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// The permission a Connect client needs unless the policy names another.
const (
	DefaultConnectVerb     = "create"
	DefaultConnectGroup    = "sparklet.io"
	DefaultConnectResource = "sparkconnect"
)

// ConnectAccessOrDefault is the policy's ConnectAccess with the defaults
// wherever it is silent.
func (s Sidecar) ConnectAccessOrDefault() ConnectAccess {
	a := ConnectAccess{Verb: DefaultConnectVerb, Group: DefaultConnectGroup, Resource: DefaultConnectResource}
	if c := s.ConnectAccess; c != nil {
		if c.Verb != "" {
			a.Verb = c.Verb
		}
		if c.Group != "" || c.Resource != "" {
			a.Group, a.Resource = c.Group, c.Resource
		}
	}
	return a
}

func (v *validator) connectAccess(at string, a *ConnectAccess) {
	if a == nil {
		return
	}
	if a.Verb != "" && !validVerb(a.Verb) {
		v.add(at+".verb", "%q is not a Kubernetes verb: lower-case letters only, such as create", a.Verb)
	}
	if a.Group != "" && a.Resource == "" {
		v.add(at+".resource", "required with group %q", a.Group)
	}
	if a.Resource != "" {
		for _, msg := range validation.IsDNS1035Label(a.Resource) {
			v.add(at+".resource", "%q: %s", a.Resource, msg)
		}
	}
	if a.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a.Group) {
			v.add(at+".group", "%q: %s", a.Group, msg)
		}
	}
}

func validVerb(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}
