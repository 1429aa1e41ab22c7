// Package certmanager runs cert-manager's controller and cainjector
// (hack/certmanager) as local processes against the local control plane,
// with cert-manager's CRDs installed, for the chart's cert-manager mode.
//
// cert-manager's own webhook is not run: its admission handlers (defaults
// and validation of cert-manager's resources, and the requester's identity
// on a CertificateRequest) are in cert-manager's internal packages, which
// only its cmd modules may import, and those modules are not published.
// Nothing the controller, the cainjector or the chart's objects need comes
// from it: cert-manager's CRDs serve a single version (no conversion
// webhook), and the built-in approver approves a CertificateRequest
// without the identity fields.
package certmanager
