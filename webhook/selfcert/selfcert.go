package selfcert

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/sparklet/sparklet/internal/certs"
)

// Secret keys.
const (
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
	// KeyPreviousCACert is the CA a rotation replaced. It stays in the
	// caBundle until it expires, so replicas still serving a certificate it
	// signed keep being trusted while they reload.
	KeyPreviousCACert = "ca.previous.crt"
)

// Config is the self-managed mode's configuration.
type Config struct {
	Namespace         string   // where the Secret and the Lease live
	SecretName        string   // holds the CA and the serving certificate
	ServiceName       string   // the webhook's Service; its DNS names go in the certificate
	WebhookConfigName string   // the MutatingWebhookConfiguration to patch
	ExtraSANs         []string // more DNS names or IPs, e.g. 127.0.0.1 for a local webhook
	// ServingValidity is the serving certificate's lifetime; it is renewed
	// when less than a third remains. The CA lives ten times as long.
	ServingValidity time.Duration
	// Interval is how often the Secret is checked and the certificate reloaded.
	Interval       time.Duration
	LeaderElection bool
	Identity       string // this replica, for the Lease; default hostname_random
}

// Manager keeps the certificate and serves it.
type Manager struct {
	cfg    Config
	client kubernetes.Interface
	log    *logrus.Entry
	now    func() time.Time
	cert   atomic.Pointer[tls.Certificate]
}

// New returns a manager; Start runs it.
func New(cfg Config, client kubernetes.Interface, log *logrus.Entry) *Manager {
	if cfg.ServingValidity == 0 {
		cfg.ServingValidity = 90 * 24 * time.Hour
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Identity == "" {
		// Unique per process: two replicas sharing a hostname must not
		// both believe they hold the Lease.
		host, _ := os.Hostname()
		suffix := make([]byte, 4)
		_, _ = rand.Read(suffix)
		cfg.Identity = host + "_" + hex.EncodeToString(suffix)
	}
	return &Manager{cfg: cfg, client: client, log: log, now: time.Now}
}

// GetCertificate serves the certificate loaded from the Secret.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := m.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate loaded from the Secret yet")
	}
	return c, nil
}

// Loaded reports whether a certificate is being served.
func (m *Manager) Loaded() bool { return m.cert.Load() != nil }

// Start keeps reconciling (as the Lease holder, or alone) and reloading
// until ctx ends. It returns once a certificate is loaded, or with an error
// when none is after two minutes.
func (m *Manager) Start(ctx context.Context) error {
	if !m.cfg.LeaderElection {
		go m.loop(ctx, m.Reconcile)
	} else {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: m.LeaseName()},
			Client:     m.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: m.cfg.Identity},
		}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					m.log.WithField("identity", m.cfg.Identity).Info("writing the certificate as the Lease holder")
					m.loop(ctx, m.Reconcile)
				},
				OnStoppedLeading: func() { m.log.Info("no longer the certificate writer") },
			},
			Name: m.LeaseName(),
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		go le.Run(ctx)
	}
	// Every replica serves what the Secret holds.
	deadline, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lastErr error
	for !m.Loaded() {
		if lastErr = m.load(deadline); lastErr == nil {
			break
		}
		select {
		case <-deadline.Done():
			return fmt.Errorf("no usable certificate in Secret %s/%s: %w", m.cfg.Namespace, m.cfg.SecretName, lastErr)
		case <-time.After(time.Second):
		}
	}
	go m.loop(ctx, m.load)
	return nil
}

// LeaseName is the Lease that elects the writer.
func (m *Manager) LeaseName() string { return m.cfg.SecretName + "-writer" }

// loop runs f now and then every interval until ctx ends; after a failure
// it retries sooner, from one second doubling up to the interval, so that
// a webhook configuration created just after the webhook starts gets its
// caBundle within seconds.
func (m *Manager) loop(ctx context.Context, f func(context.Context) error) {
	retry := time.Second
	for {
		wait := m.cfg.Interval
		if err := f(ctx); err != nil {
			m.log.WithError(err).WithField("retryIn", retry.String()).Warn("certificate check failed")
			wait, retry = min(retry, m.cfg.Interval), min(2*retry, m.cfg.Interval)
		} else {
			retry = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// load serves the Secret's certificate when it is valid.
func (m *Manager) load(ctx context.Context) error {
	s, err := m.client.CoreV1().Secrets(m.cfg.Namespace).Get(ctx, m.cfg.SecretName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	c, err := tls.X509KeyPair(s.Data[KeyCert], s.Data[KeyKey])
	if err != nil {
		return fmt.Errorf("secret %s: %w", m.cfg.SecretName, err)
	}
	if old := m.cert.Load(); old == nil || !bytes.Equal(old.Certificate[0], c.Certificate[0]) {
		m.cert.Store(&c)
		m.log.WithField("secret", m.cfg.SecretName).Info("serving certificate loaded")
	}
	return nil
}

// hosts are the names the serving certificate must cover.
func (m *Manager) hosts() []string {
	svc, ns := m.cfg.ServiceName, m.cfg.Namespace
	return append([]string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}, m.cfg.ExtraSANs...)
}

// Reconcile makes the Secret hold a valid CA and serving certificate and
// the webhook configuration trust that CA.
func (m *Manager) Reconcile(ctx context.Context) error {
	secrets := m.client.CoreV1().Secrets(m.cfg.Namespace)
	s, err := secrets.Get(ctx, m.cfg.SecretName, metav1.GetOptions{})
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read Secret %s: %w", m.cfg.SecretName, err)
	}
	if !exists {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.cfg.SecretName, Namespace: m.cfg.Namespace}, Type: corev1.SecretTypeOpaque}
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	reason := m.check(s.Data)
	if reason != "" {
		m.log.WithField("reason", reason).Info("issuing a new serving certificate")
		if err := m.issue(s.Data); err != nil {
			return err
		}
		if exists {
			_, err = secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: "sparklet-webhook"})
		} else {
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: "sparklet-webhook"})
		}
		if err != nil {
			return fmt.Errorf("write Secret %s: %w", m.cfg.SecretName, err)
		}
	}
	return m.patchCABundle(ctx, m.bundle(s.Data))
}

// bundle is the CA, followed by the CA it replaced while that is valid.
func (m *Manager) bundle(d map[string][]byte) []byte {
	b := bytes.Clone(d[KeyCACert])
	if prev, err := parseCert(d[KeyPreviousCACert]); err == nil && m.now().Before(prev.NotAfter) {
		b = append(b, d[KeyPreviousCACert]...)
	}
	return b
}

// check returns why the Secret's contents need replacing, or "".
func (m *Manager) check(d map[string][]byte) string {
	ca, err := parseCert(d[KeyCACert])
	if err != nil {
		return "no valid CA"
	}
	if _, err := tls.X509KeyPair(d[KeyCACert], d[KeyCAKey]); err != nil {
		return "CA key does not match"
	}
	leaf, err := parseCert(d[KeyCert])
	if err != nil {
		return "no valid serving certificate"
	}
	if _, err := tls.X509KeyPair(d[KeyCert], d[KeyKey]); err != nil {
		return "serving key does not match"
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, h := range m.hosts() {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: m.now()}); err != nil {
			return fmt.Sprintf("serving certificate does not verify for %s", h)
		}
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if leaf.NotAfter.Sub(m.now()) < life/3 {
		return "serving certificate has less than a third of its life left"
	}
	if ca.NotAfter.Sub(m.now()) < 2*life {
		return "CA expires soon"
	}
	return ""
}

// issue writes a new serving certificate, and a new CA when the current one
// is unusable or expires soon.
func (m *Manager) issue(d map[string][]byte) error {
	now := m.now()
	ca, caErr := parseCert(d[KeyCACert])
	caPair, pairErr := tls.X509KeyPair(d[KeyCACert], d[KeyCAKey])
	parent := &certs.Pair{Cert: ca}
	if caErr != nil || pairErr != nil || ca.NotAfter.Sub(now) < 2*m.cfg.ServingValidity {
		newCA, err := certs.New(&x509.Certificate{Subject: pkix.Name{CommonName: m.cfg.ServiceName + "-ca"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * m.cfg.ServingValidity),
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}, nil)
		if err != nil {
			return err
		}
		if caErr == nil {
			d[KeyPreviousCACert] = d[KeyCACert]
		}
		d[KeyCACert], d[KeyCAKey] = newCA.CertPEM, newCA.KeyPEM
		parent = newCA
	} else if signer, ok := caPair.PrivateKey.(crypto.Signer); ok {
		parent.Key = signer
	} else {
		return fmt.Errorf("%s: a %T cannot sign", KeyCAKey, caPair.PrivateKey)
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: m.cfg.ServiceName + "." + m.cfg.Namespace + ".svc"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(m.cfg.ServingValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	certs.AddHosts(tmpl, m.hosts()...)
	leaf, err := certs.New(tmpl, parent)
	if err != nil {
		return err
	}
	d[KeyCert], d[KeyKey] = leaf.CertPEM, leaf.KeyPEM
	return nil
}

// patchCABundle makes every webhook of the configuration trust bundle.
func (m *Manager) patchCABundle(ctx context.Context, bundle []byte) error {
	mwcs := m.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc, err := mwcs.Get(ctx, m.cfg.WebhookConfigName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read MutatingWebhookConfiguration %s: %w", m.cfg.WebhookConfigName, err)
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	if mwc.ResourceVersion != "" { // fail rather than patch indexes of a changed object
		ops = append(ops, op{"test", "/metadata/resourceVersion", mwc.ResourceVersion})
	}
	changed := 0
	for i, w := range mwc.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			ops = append(ops, op{"add", fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), bundle}) // []byte marshals as base64
			changed++
		}
	}
	if changed == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := mwcs.Patch(ctx, mwc.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "sparklet-webhook"}); err != nil {
		return fmt.Errorf("patch caBundle into %s: %w", mwc.Name, err)
	}
	m.log.WithFields(logrus.Fields{"webhookConfiguration": mwc.Name, "webhooks": changed}).Info("caBundle updated")
	return nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}
