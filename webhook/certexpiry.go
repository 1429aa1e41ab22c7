package webhook

import (
	"crypto/x509"

	"github.com/prometheus/client_golang/prometheus"
)

// certExpiry exports when the serving certificate in use expires, read at
// each scrape; nothing while no certificate is loaded.
type certExpiry struct {
	source func() CertSource
	desc   *prometheus.Desc
}

func newCertExpiry(source func() CertSource) *certExpiry {
	return &certExpiry{source: source, desc: prometheus.NewDesc("sparklet_webhook_certificate_expiry_timestamp_seconds",
		"When the serving certificate the webhook presents expires (its NotAfter), in Unix seconds.", nil, nil)}
}

func (c *certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certExpiry) Collect(ch chan<- prometheus.Metric) {
	src := c.source()
	if src == nil || !src.Loaded() {
		return
	}
	cert, err := src.GetCertificate(nil)
	if err != nil || len(cert.Certificate) == 0 {
		return
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(leaf.NotAfter.Unix()))
}
