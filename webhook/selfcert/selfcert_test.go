package selfcert

import (
	"context"
	"crypto/x509"
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func manager(t *testing.T) (*Manager, *fake.Clientset) {
	mwc := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sparklet"},
		Webhooks: []admissionv1.MutatingWebhook{{Name: "pods.sparklet.io"}}}
	client := fake.NewClientset(mwc)
	log := logrus.New()
	log.SetOutput(io.Discard)
	m := New(Config{Namespace: "sparklet-system", SecretName: "sparklet-certs", ServiceName: "sparklet", WebhookConfigName: "sparklet",
		ExtraSANs: []string{"127.0.0.1"}, ServingValidity: 90 * 24 * time.Hour}, client, log.WithField("component", "selfcert"))
	return m, client
}

func (m *Manager) secretData(t *testing.T) map[string][]byte {
	s, err := m.client.CoreV1().Secrets("sparklet-system").Get(context.Background(), "sparklet-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data
}

func count(c *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestIssuesVerifiesAndPatchesCABundle(t *testing.T) {
	m, client := manager(t)
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := m.secretData(t)
	if reason := m.check(d); reason != "" {
		t.Fatalf("fresh certificate fails its own check: %s", reason)
	}
	leaf, _ := parseCert(d[KeyCert])
	if len(leaf.IPAddresses) != 1 || leaf.DNSNames[2] != "sparklet.sparklet-system.svc" {
		t.Errorf("SANs = %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	mwc, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "sparklet", metav1.GetOptions{})
	if string(mwc.Webhooks[0].ClientConfig.CABundle) != string(d[KeyCACert]) {
		t.Error("caBundle not patched to the CA")
	}
	// A second reconcile with a good Secret writes nothing.
	before := count(client, "update", "secrets") + count(client, "patch", "mutatingwebhookconfigurations")
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := count(client, "update", "secrets") + count(client, "patch", "mutatingwebhookconfigurations"); after != before {
		t.Errorf("a good Secret was rewritten (%d -> %d writes)", before, after)
	}
}

func TestRenewsInsideTheWindowAndKeepsTheCA(t *testing.T) {
	m, _ := manager(t)
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := m.secretData(t)
	m.now = func() time.Time { return time.Now().Add(61 * 24 * time.Hour) } // less than a third of 90 days left
	if reason := m.check(first); reason == "" {
		t.Fatal("an aging certificate passed the check")
	}
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := m.secretData(t)
	if string(second[KeyCert]) == string(first[KeyCert]) {
		t.Error("serving certificate not renewed")
	}
	if string(second[KeyCACert]) != string(first[KeyCACert]) {
		t.Error("the CA changed although it is still valid: clients would need the new caBundle first")
	}
}

func TestWrongNamesAreReissued(t *testing.T) {
	m, _ := manager(t)
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.cfg.ServiceName = "renamed" // after an upgrade that renamed the Service
	if reason := m.check(m.secretData(t)); reason == "" {
		t.Fatal("a certificate for the old Service name passed")
	}
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	leaf, _ := parseCert(m.secretData(t)[KeyCert])
	if err := leaf.VerifyHostname("renamed.sparklet-system.svc"); err != nil {
		t.Error(err)
	}
}

func TestGarbageIsReplaced(t *testing.T) {
	m, client := manager(t)
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := client.CoreV1().Secrets("sparklet-system").Get(context.Background(), "sparklet-certs", metav1.GetOptions{})
	s.Data[KeyKey] = []byte("not a key")
	if _, err := client.CoreV1().Secrets("sparklet-system").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reason := m.check(m.secretData(t)); reason != "" {
		t.Errorf("after reconcile: %s", reason)
	}
	if err := m.load(context.Background()); err != nil || !m.Loaded() {
		t.Errorf("load: %v", err)
	}
	c, _ := m.GetCertificate(nil)
	leaf, _ := x509.ParseCertificate(c.Certificate[0])
	if leaf.Subject.CommonName != "sparklet.sparklet-system.svc" {
		t.Errorf("served %s", leaf.Subject.CommonName)
	}
}
