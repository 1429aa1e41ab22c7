package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"os"
	"time"

	"github.com/sparklet/sparklet/internal/certs"
)

// authority is a CA. The cluster's signs the API server's serving
// certificate, the admin client certificate and, on request, webhooks';
// the front proxy has its own.
type authority struct{ *certs.Pair }

func newAuthority(cn string) (*authority, error) {
	ca, err := certs.New(&x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, err
	}
	return &authority{ca}, nil
}

// issue signs a certificate for a server (hosts are DNS names or IPs) or,
// with client set, for a client named cn in the given organisations.
func (a *authority) issue(cn string, orgs []string, hosts []string, client bool) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	certs.AddHosts(tmpl, hosts...)
	p, err := certs.New(tmpl, a.Pair)
	if err != nil {
		return nil, nil, err
	}
	return p.CertPEM, p.KeyPEM, nil
}

// frontProxyClient is the name of the API server's front-proxy client
// certificate, the only one allowed to set the X-Remote-* headers.
const frontProxyClient = "front-proxy-client"

// frontProxyPEM is the front proxy's own CA and the client certificate it
// signs, kept apart from the cluster CA as kubeadm keeps them, so that no
// other client certificate may pass a user in headers.
type frontProxyPEM struct{ ca, cert, key []byte }

func (c *Cluster) frontProxy() (frontProxyPEM, error) {
	ca, err := newAuthority("sparklet-front-proxy-ca")
	if err != nil {
		return frontProxyPEM{}, err
	}
	cert, key, err := ca.issue(frontProxyClient, nil, nil, true)
	if err != nil {
		return frontProxyPEM{}, err
	}
	return frontProxyPEM{ca.CertPEM, cert, key}, nil
}

// serviceAccountKeys returns the key pair the API server signs and checks
// service-account tokens with.
func serviceAccountKeys() (privPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), pemBlock("PUBLIC KEY", pub), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }
