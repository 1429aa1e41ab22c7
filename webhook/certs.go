package webhook

import "crypto/tls"

// CertSource serves the webhook's TLS certificate. certfiles.Source reads
// it from files; the self-managed mode keeps it in a Secret.
type CertSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	Loaded() bool
}
