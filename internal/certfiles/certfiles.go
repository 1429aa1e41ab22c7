package certfiles

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/filewatch"
)

// Source serves the certificate of CertFile and KeyFile, polled every
// Interval.
type Source struct {
	CertFile, KeyFile string
	Interval          time.Duration
	Log               *logrus.Entry
	cert              atomic.Pointer[tls.Certificate]
}

// Start loads the pair and watches it until ctx ends. A pair that does
// not load at start is an error; a later one is logged and the current
// certificate kept.
func (f *Source) Start(ctx context.Context) error {
	return filewatch.Watch(ctx, f.Interval, []string{f.CertFile, f.KeyFile}, func(c [][]byte) error {
		cert, err := tls.X509KeyPair(c[0], c[1])
		if err != nil {
			if f.Loaded() {
				f.Log.WithError(err).Warn("certificate files changed but do not form a valid pair yet; keeping the current certificate")
			}
			return fmt.Errorf("%s and %s are not a PEM certificate and its key: %w", f.CertFile, f.KeyFile, err)
		}
		f.cert.Store(&cert)
		f.Log.WithFields(describe(cert.Leaf)).WithField("file", f.CertFile).Info("serving certificate loaded")
		return nil
	})
}

// describe is what a log says of a certificate: whom it names, who issued
// it and until when it is valid.
func describe(c *x509.Certificate) logrus.Fields {
	if c == nil {
		return nil
	}
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return logrus.Fields{"names": names, "issuer": c.Issuer.String(), "serial": c.SerialNumber.String(), "notAfter": c.NotAfter.UTC().Format(time.RFC3339)}
}

// GetCertificate implements tls.Config.GetCertificate.
func (f *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := f.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate loaded")
	}
	return c, nil
}

// Loaded reports whether a certificate is loaded.
func (f *Source) Loaded() bool { return f.cert.Load() != nil }
