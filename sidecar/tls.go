package sidecar

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"sync"
	"time"

	"github.com/sparklet/sparklet/internal/atomicfile"
	"github.com/sparklet/sparklet/internal/certs"
)

// The JVM talks plain HTTP to 127.0.0.1 (fabric8 accepts http masters).
// kubectl and client-go never send a bearer token over plain HTTP, so the
// same port also speaks TLS with a certificate made at start-up and written
// next to the token: a connection whose first byte is a TLS handshake
// record is served over TLS.

// selfSignedCert makes a certificate for 127.0.0.1 and writes it, in PEM,
// to certFile for clients to trust.
func selfSignedCert(certFile string) (tls.Certificate, error) {
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "sparklet-sidecar"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	certs.AddHosts(tmpl, "127.0.0.1", "localhost")
	pair, err := certs.New(tmpl, nil)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := atomicfile.Write(certFile, pair.CertPEM, 0o444); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{pair.Cert.Raw}, PrivateKey: pair.Key, Leaf: pair.Cert}, nil
}

// eitherListener hands out plain connections, or TLS ones when the client
// opens with a TLS handshake.
type eitherListener struct {
	net.Listener
	tls *tls.Config
}

func (l *eitherListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, tls: l.tls}, nil
}

// sniffConn decides on its first read whether the client speaks TLS, so a
// slow client never holds up Accept.
type sniffConn struct {
	net.Conn
	tls  *tls.Config
	once sync.Once
	via  net.Conn
}

func (c *sniffConn) pick() {
	c.once.Do(func() {
		br := bufio.NewReader(c.Conn)
		plain := &peekedConn{Conn: c.Conn, r: br}
		if first, err := br.Peek(1); err == nil && first[0] == 0x16 { // a TLS handshake record
			c.via = tls.Server(plain, c.tls)
			return
		}
		c.via = plain
	})
}

func (c *sniffConn) Read(p []byte) (int, error)  { c.pick(); return c.via.Read(p) }
func (c *sniffConn) Write(p []byte) (int, error) { c.pick(); return c.via.Write(p) }
func (c *sniffConn) Close() error {
	if c.via != nil {
		return c.via.Close()
	}
	return c.Conn.Close()
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
