// Package policy is the platform's sparklet policy, one YAML document.
// It holds cluster defaults and enforced values, per-namespace sections,
// credentials, limits and allowed images. It is decoded strictly and
// validated at load.
package policy
