package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/filewatch"
)

// CertSource serves the webhook's TLS certificate. FileCerts reads it from
// files; the self-managed mode keeps it in a Secret.
type CertSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	Loaded() bool
}

// FileCerts serves a certificate from a cert and key file pair and reloads
// it when either changes, as cert-manager's file source does: new TLS
// handshakes get the new certificate without a restart.
type FileCerts struct {
	CertFile, KeyFile string
	Interval          time.Duration
	Log               *logrus.Entry
	cert              atomic.Pointer[tls.Certificate]
}

// Start loads the pair and watches it until ctx ends.
func (f *FileCerts) Start(ctx context.Context) error {
	return filewatch.Watch(ctx, f.Interval, []string{f.CertFile, f.KeyFile}, func(c [][]byte) error {
		cert, err := tls.X509KeyPair(c[0], c[1])
		if err != nil {
			if f.Loaded() {
				f.Log.WithError(err).Warn("certificate files changed but do not form a valid pair yet; keeping the current certificate")
			}
			return fmt.Errorf("load --tls-cert-file %s / --tls-key-file %s: %w", f.CertFile, f.KeyFile, err)
		}
		f.cert.Store(&cert)
		f.Log.WithField("file", f.CertFile).Info("serving certificate loaded")
		return nil
	})
}

// GetCertificate implements tls.Config.GetCertificate.
func (f *FileCerts) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := f.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate loaded")
	}
	return c, nil
}

// Loaded reports whether a certificate is loaded.
func (f *FileCerts) Loaded() bool { return f.cert.Load() != nil }
