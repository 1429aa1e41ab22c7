package certs

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"
)

func TestCASignsLeaf(t *testing.T) {
	ca, err := New(&x509.Certificate{
		Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "leaf"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	AddHosts(tmpl, "127.0.0.1", "localhost")
	leaf, err := New(tmpl, ca)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.Cert.IPAddresses) != 1 || len(leaf.Cert.DNSNames) != 1 {
		t.Errorf("hosts: IPs %v, DNS names %v", leaf.Cert.IPAddresses, leaf.Cert.DNSNames)
	}
	if leaf.Cert.SerialNumber.Sign() <= 0 || leaf.Cert.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Errorf("serial numbers: CA %v, leaf %v", ca.Cert.SerialNumber, leaf.Cert.SerialNumber)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, h := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
			t.Errorf("leaf does not verify for %s: %v", h, err)
		}
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{DNSName: "elsewhere", Roots: roots}); err == nil {
		t.Error("leaf verifies for a host it does not name")
	}
	for _, p := range []*Pair{ca, leaf} {
		if _, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
			t.Errorf("%s: PEM pair: %v", p.Cert.Subject.CommonName, err)
		}
	}
}
