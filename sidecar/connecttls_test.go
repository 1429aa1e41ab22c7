package sidecar

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/atomicfile"
	"github.com/sparklet/sparklet/internal/certs"
	"github.com/sparklet/sparklet/policy"
)

// testCA is a certificate authority and a server certificate it signed
// for 127.0.0.1.
type testCA struct {
	ca, server *certs.Pair
	pool       *x509.CertPool
}

func newTestCA(t testing.TB, name string) testCA {
	t.Helper()
	ca, err := certs.New(&x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "spark-connect"}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	certs.AddHosts(tmpl, "127.0.0.1")
	server, err := certs.New(tmpl, ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return testCA{ca: ca, server: server, pool: pool}
}

// install writes the server certificate as the kubelet lays out a
// kubernetes.io/tls Secret.
func (c testCA) install(t testing.TB, dir string) {
	t.Helper()
	for name, data := range map[string][]byte{"tls.crt": c.server.CertPEM, "tls.key": c.server.KeyPEM, "ca.crt": c.ca.CertPEM} {
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// serveConnectTLS serves a proxy to jvm over TLS only with ca's server
// certificate, installed in dir, until the test ends.
func serveConnectTLS(t testing.TB, auth *connectAuth, jvm string, ca testCA, dir string) (addr string) {
	t.Helper()
	ca.install(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tlsConf, err := loadConnectCert(ctx, dir, "connect-tls", logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newConnectProxy(auth, jvm, []byte("x"), limitsOf(policy.Connect{}), prometheus.NewRegistry(), logrus.NewEntry(logrus.New()))
	proxy.tlsSecret = "connect-tls"
	auth.connectWith = connectTLS
	addr, stop, err := serveConnect("127.0.0.1:0", proxy, tlsConf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// tlsTransport is an HTTP/2 client that trusts pool.
func tlsTransport(pool *x509.CertPool) *http.Transport {
	tr := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{RootCAs: pool}}
	tr.Protocols.SetHTTP2(true)
	return tr
}

// TestConnectTLS: with a certificate the sidecar serves Connect clients
// over TLS with HTTP/2 by ALPN; a cleartext call is refused with
// UNAUTHENTICATED saying to use TLS, its token never reviewed nor
// forwarded; a client that trusts another CA fails the handshake; the
// certificate is reloaded when its files change.
func TestConnectTLS(t *testing.T) {
	connectCertInterval = 10 * time.Millisecond
	t.Cleanup(func() { connectCertInterval = 10 * time.Second })
	first, second := newTestCA(t, "first CA"), newTestCA(t, "second CA")
	dir := t.TempDir()
	jvm := startFakeJVM(t)
	rv := &reviews{users: map[string]string{"alice-token": "alice"}, allowed: map[string]bool{"alice": true}}
	auth := newConnectAuth(rv.clientset(), "spark-jobs", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	addr := serveConnectTLS(t, auth, jvm.addr, first, dir)
	frame := connectRequest("session-1", "me", false)

	trusting := tlsTransport(first.pool)
	body, status, msg, err := callWith(t, trusting, "https://"+addr+rpcExecutePlan, "alice-token", frame)
	if err != nil || status != "0" || body != "reply to session-1" {
		t.Fatalf("over TLS: status %s %q, body %q, error %v; want 0 and the JVM's reply", status, msg, body, err)
	}
	_, status, msg, _ = callWith(t, trusting, "https://"+addr+rpcExecutePlan, "", frame)
	if status != "16" || !strings.Contains(msg, "no Kubernetes token") || !strings.Contains(msg, connectTLS) {
		t.Errorf("over TLS without a token: status %s %q, want 16 saying to connect with %s", status, msg, connectTLS)
	}
	trusting.CloseIdleConnections()

	_, status, msg = call(t, addr, "alice-token")
	for _, want := range []string{"takes TLS only", "use_ssl=true", `Secret "connect-tls"`, "crossed the network unencrypted"} {
		if status != "16" || !strings.Contains(msg, want) {
			t.Errorf("cleartext: status %s %q, want 16 saying %q", status, msg, want)
		}
	}
	if n := jvm.calls.Load(); n != 1 {
		t.Errorf("the JVM got %d calls, want the TLS client's 1", n)
	}
	if n := len(rv.sars); n != 1 {
		t.Errorf("%d SubjectAccessReviews, want the TLS client's 1: a cleartext call's token is never reviewed", n)
	}

	other := tlsTransport(second.pool)
	_, _, _, err = callWith(t, other, "https://"+addr+rpcExecutePlan, "alice-token", frame)
	if !errors.As(err, new(x509.UnknownAuthorityError)) {
		t.Errorf("a client trusting another CA: error %v, want an unknown authority", err)
	}
	other.CloseIdleConnections()

	second.install(t, dir)
	deadline := time.Now().Add(10 * time.Second)
	for servedSerial(t, addr) != second.server.Cert.SerialNumber.String() {
		if time.Now().After(deadline) {
			t.Fatalf("the server still serves serial %s 10 s after the files changed, want %s", servedSerial(t, addr), second.server.Cert.SerialNumber)
		}
		time.Sleep(10 * time.Millisecond)
	}
	renewed := tlsTransport(second.pool)
	defer renewed.CloseIdleConnections()
	if _, status, msg, err := callWith(t, renewed, "https://"+addr+rpcExecutePlan, "alice-token", frame); err != nil || status != "0" {
		t.Errorf("after the rotation, a client trusting the new CA: status %s %q, error %v", status, msg, err)
	}
}

// servedSerial is the serial number of the certificate a new TLS connection to
// addr is served.
func servedSerial(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Errorf("ALPN negotiated %q, want h2", p)
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestConnectTLSBadFiles: files that are no certificate and key keep the
// sidecar from starting, with an error that names the Secret and what it
// must hold.
func TestConnectTLSBadFiles(t *testing.T) {
	a, b := newTestCA(t, "a"), newTestCA(t, "b")
	for name, files := range map[string]map[string][]byte{
		"empty":          {},
		"not PEM":        {"tls.crt": []byte("hello"), "tls.key": []byte("world")},
		"key of another": {"tls.crt": a.server.CertPEM, "tls.key": b.server.KeyPEM},
	} {
		dir := t.TempDir()
		for f, data := range files {
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := loadConnectCert(context.Background(), dir, "connect-tls", logrus.NewEntry(logrus.New()))
		for _, want := range []string{`Secret "connect-tls" (the sparklet policy's connect.tlsSecretName)`, "tls.crt and tls.key"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %v, want it to say %q", name, err, want)
			}
		}
	}
}
