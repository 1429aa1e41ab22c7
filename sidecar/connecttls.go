package sidecar

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/certfiles"
)

// connectCertInterval is how often the sidecar reads its Connect
// certificate again: the kubelet rewrites a Secret volume in place when
// the Secret changes, and new connections get the new certificate.
var connectCertInterval = 10 * time.Second

// loadConnectCert serves tls.crt and tls.key of dir, the policy's
// connect.tlsSecretName mounted, and reloads them until ctx ends. Files
// that are missing or no certificate and key are an error: the sidecar
// then does not start.
func loadConnectCert(ctx context.Context, dir, secret string, log *logrus.Entry) (*tls.Config, error) {
	src := &certfiles.Source{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		Interval: connectCertInterval, Log: log.WithField("secret", secret)}
	if err := src.Start(ctx); err != nil {
		return nil, fmt.Errorf("the Spark Connect certificate from Secret %q (the sparklet policy's connect.tlsSecretName): %w; "+
			"it needs tls.crt and tls.key, a certificate and its key in PEM, as a kubernetes.io/tls Secret from cert-manager has (docs/connect.md#tls)", secret, err)
	}
	// gRPC clients insist on HTTP/2 by ALPN (grpc/grpc doc/PROTOCOL-HTTP2.md).
	return &tls.Config{GetCertificate: src.GetCertificate, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, nil
}

// tlsFirstListener serves TLS connections, and cleartext ones too so that
// the handler can refuse their calls with a gRPC status that says to use
// TLS, which a client shows at once; a failed handshake is an
// UNAVAILABLE, which Spark's Python client retries for about ten minutes
// (DefaultPolicy in pyspark/sql/connect/client/retries.py, 4.2.0). A connection's first byte decides: 0x16
// opens a TLS handshake record. Connections are sorted off the accept
// loop, so a slow client holds up no other. Those it hands out are
// *tls.Conn for TLS, so net/http negotiates HTTP/2 by ALPN and sets
// Request.TLS.
type tlsFirstListener struct {
	net.Listener
	tls   *tls.Config
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newTLSFirstListener(ln net.Listener, cfg *tls.Config) *tlsFirstListener {
	l := &tlsFirstListener{Listener: ln, tls: cfg, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

// sortTimeout bounds how long a new connection may take to send its first
// byte.
const sortTimeout = 10 * time.Second

func (l *tlsFirstListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.Close()
			return
		}
		go l.sort(c)
	}
}

func (l *tlsFirstListener) sort(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(sortTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 {
		out = tls.Server(out, l.tls)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		out.Close()
	}
}

func (l *tlsFirstListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tlsFirstListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}
