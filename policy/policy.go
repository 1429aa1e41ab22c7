// Package policy is the platform's sparklet policy: one YAML document with
// cluster defaults and enforced values, per-namespace sections, credentials,
// limits and allowed images. It is decoded strictly and validated at load.
package policy

// Policy is the whole policy document. (Fields are filled in by the policy work.)
type Policy struct{}

// Effective is the policy as it applies to one namespace: cluster defaults,
// overridden by the namespace's section, then the cluster's enforced values.
type Effective struct{}

// Parse decodes and validates a policy document.
func Parse(data []byte) (*Policy, error) { return &Policy{}, nil }

// For returns the policy in effect for a namespace.
func (p *Policy) For(namespace string) *Effective { return &Effective{} }
