package certmanager

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Serial is the serial number of the first certificate in certPEM.
func Serial(certPEM []byte) (*big.Int, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, fmt.Errorf("no PEM certificate in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	return cert.SerialNumber, nil
}

// Renewal is a certificate cert-manager issued again.
type Renewal struct {
	// Old and New are the serial numbers before and after.
	Old, New *big.Int
	// PEM is the new tls.crt.
	PEM []byte
	// Took is the time from the request to the Secret's update.
	Took time.Duration
}

// RenewAndWait renews the Certificate ns/certificate as Renew does and
// waits until its Secret ns/secret holds a certificate with another
// serial number.
func (m *CertManager) RenewAndWait(ctx context.Context, ns, certificate, secret string) (*Renewal, error) {
	secrets := m.opts.Cluster.Client().CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	r := &Renewal{}
	if r.Old, err = Serial(s.Data["tls.crt"]); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, secret, err)
	}
	start := time.Now()
	if err := m.Renew(ctx, ns, certificate); err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		s, err := secrets.Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		serial, err := Serial(s.Data["tls.crt"])
		if err != nil || serial.Cmp(r.Old) == 0 {
			return false, nil
		}
		r.New, r.PEM = serial, s.Data["tls.crt"]
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("cert-manager did not renew %s/%s into its Secret %s: %w\n%s", ns, certificate, secret, err, m.Logs(30))
	}
	r.Took = time.Since(start)
	return r, nil
}

// WaitChartCA checks the chart's certificate chain in namespace ns, its
// objects named after fullname: the serving Secret <fullname>-tls carries
// as ca.crt the CA of Secret <fullname>-ca. It then waits until the
// cainjector has put that CA into the first webhook of the
// MutatingWebhookConfiguration <fullname>, and returns the serving Secret
// and the caBundle.
func (m *CertManager) WaitChartCA(ctx context.Context, ns, fullname string) (*corev1.Secret, []byte, error) {
	client := m.opts.Cluster.Client()
	serving, err := client.CoreV1().Secrets(ns).Get(ctx, fullname+"-tls", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	ca, err := client.CoreV1().Secrets(ns).Get(ctx, fullname+"-ca", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(serving.Data["ca.crt"], ca.Data["tls.crt"]) {
		return nil, nil, fmt.Errorf("the serving Secret %s/%s-tls's ca.crt is not the chart's CA certificate", ns, fullname)
	}
	var bundle []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		c, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, fullname, metav1.GetOptions{})
		if err != nil || len(c.Webhooks) == 0 {
			return false, nil
		}
		bundle = c.Webhooks[0].ClientConfig.CABundle
		return bytes.Equal(bundle, serving.Data["ca.crt"]), nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("the cainjector did not inject the chart's CA into %s (caBundle %q): %w\n%s", fullname, bundle, err, m.Logs(20))
	}
	return serving, bundle, nil
}

// Repeated runs a check again and again, counting its outcomes, until
// Stop.
type Repeated struct {
	ok, failed atomic.Int64
	last       atomic.Value
	stop       context.CancelFunc
	done       chan struct{}
}

// Repeat runs check every interval, from now until Stop.
func Repeat(ctx context.Context, interval time.Duration, check func(context.Context) error) *Repeated {
	ctx, stop := context.WithCancel(ctx)
	r := &Repeated{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
			if err := check(ctx); err != nil && ctx.Err() == nil {
				r.failed.Add(1)
				r.last.Store(err.Error())
			} else if err == nil {
				r.ok.Add(1)
			}
			return false, nil
		})
	}()
	return r
}

// Stop ends the checks and returns how many passed and failed, and the
// last failure's message.
func (r *Repeated) Stop() (ok, failed int64, last string) {
	r.stop()
	<-r.done
	last, _ = r.last.Load().(string)
	return r.ok.Load(), r.failed.Load(), last
}
