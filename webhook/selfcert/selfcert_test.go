package selfcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const ns, secretName = "sparklet-system", "sparklet-certs"

func newManager(client *fake.Clientset, leaderElection bool) *Manager {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return New(Config{Namespace: ns, SecretName: secretName, ServiceName: "sparklet", WebhookConfigName: "sparklet",
		ExtraSANs: []string{"127.0.0.1"}, ServingValidity: 90 * 24 * time.Hour, Interval: time.Hour, LeaderElection: leaderElection},
		client, log.WithField("component", "selfcert"))
}

// fakeCluster holds a webhook configuration with two webhooks, both of
// which must get the caBundle.
func fakeCluster() *fake.Clientset {
	return fake.NewClientset(&admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sparklet", ResourceVersion: "7"},
		Webhooks: []admissionv1.MutatingWebhook{{Name: "pods.sparklet.io"}, {Name: "other.sparklet.io"}}})
}

func secretData(t *testing.T, c *fake.Clientset) map[string][]byte {
	t.Helper()
	s, err := c.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data
}

func setSecretData(t *testing.T, c *fake.Clientset, d map[string][]byte) {
	t.Helper()
	s, err := c.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = d
	if _, err := c.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// writes are the recorded actions that change the Secret or the webhook configuration.
func writes(c *fake.Clientset) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch":
			if r := a.GetResource().Resource; r == "secrets" || r == "mutatingwebhookconfigurations" {
				out = append(out, a)
			}
		}
	}
	return out
}

// pemCerts parses every certificate of a PEM bundle.
func pemCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for b, rest := pem.Decode(data); b != nil; b, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func TestFirstReconcileIssuesAndPatchesEveryWebhook(t *testing.T) {
	client := fakeCluster()
	m := newManager(client, false)
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := secretData(t, client)
	if reason := m.check(d); reason != "" {
		t.Fatalf("a fresh certificate fails its own check: %s", reason)
	}
	leaf := pemCerts(t, d[KeyCert])[0]
	wantDNS := []string{"sparklet", "sparklet.sparklet-system", "sparklet.sparklet-system.svc", "sparklet.sparklet-system.svc.cluster.local"}
	if !slices.Equal(leaf.DNSNames, wantDNS) || len(leaf.IPAddresses) != 1 || leaf.IPAddresses[0].String() != "127.0.0.1" {
		t.Errorf("SANs = %v %v, want %v and 127.0.0.1", leaf.DNSNames, leaf.IPAddresses, wantDNS)
	}
	if ca := pemCerts(t, d[KeyCACert])[0]; !ca.IsCA || ca.NotAfter.Sub(leaf.NotAfter) < 8*90*24*time.Hour {
		t.Errorf("CA: isCA %v, expires %s, serving certificate %s", ca.IsCA, ca.NotAfter, leaf.NotAfter)
	}

	w := writes(client)
	if len(w) != 2 || w[0].GetVerb() != "create" || w[1].GetVerb() != "patch" {
		t.Fatalf("writes = %v, want create secret, patch webhook configuration", w)
	}
	p := w[1].(k8stesting.PatchAction)
	if p.GetPatchType() != types.JSONPatchType || p.GetName() != "sparklet" {
		t.Errorf("patch %s of %s", p.GetPatchType(), p.GetName())
	}
	var ops []struct{ Op, Path, Value string }
	if err := json.Unmarshal(p.GetPatch(), &ops); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, op := range ops {
		paths[op.Path] = true
	}
	if !paths["/metadata/resourceVersion"] || !paths["/webhooks/0/clientConfig/caBundle"] || !paths["/webhooks/1/clientConfig/caBundle"] {
		t.Errorf("patch ops = %s", p.GetPatch())
	}
	mwc, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "sparklet", metav1.GetOptions{})
	for _, wh := range mwc.Webhooks {
		if !bytes.Equal(wh.ClientConfig.CABundle, d[KeyCACert]) {
			t.Errorf("webhook %s caBundle is not the CA", wh.Name)
		}
	}

	// A good Secret and caBundle: nothing is written again.
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(writes(client)); n != 2 {
		t.Errorf("a good Secret was rewritten: %d writes", n)
	}
}

func TestReconcileReissues(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		name               string
		after              time.Duration // clock moved forward
		damage             func(m *Manager, d map[string][]byte)
		newServing, newCA  bool
		previousCAInBundle bool
	}{
		{name: "fresh", newServing: false},
		{name: "more than a third of life left", after: 59 * day},
		{name: "less than a third of life left", after: 61 * day, newServing: true},
		{name: "expired", after: 91 * day, newServing: true},
		{name: "Service renamed", damage: func(m *Manager, _ map[string][]byte) { m.cfg.ServiceName = "renamed" }, newServing: true},
		{name: "new extra SAN", damage: func(m *Manager, _ map[string][]byte) { m.cfg.ExtraSANs = []string{"sparklet.example.com"} }, newServing: true},
		{name: "tls.crt missing", damage: func(_ *Manager, d map[string][]byte) { delete(d, KeyCert) }, newServing: true},
		{name: "tls.key of another certificate", damage: func(_ *Manager, d map[string][]byte) { d[KeyKey] = d[KeyCAKey] }, newServing: true},
		{name: "ca.crt garbage", damage: func(_ *Manager, d map[string][]byte) { d[KeyCACert] = []byte("garbage") }, newServing: true, newCA: true},
		{name: "ca.key missing", damage: func(_ *Manager, d map[string][]byte) { delete(d, KeyCAKey) }, newServing: true, newCA: true, previousCAInBundle: true},
		{name: "CA near its end", after: 750 * day, newServing: true, newCA: true, previousCAInBundle: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fakeCluster()
			m := newManager(client, false)
			if err := m.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			first := secretData(t, client)
			if tc.damage != nil {
				d := map[string][]byte{}
				for k, v := range first {
					d[k] = v
				}
				tc.damage(m, d)
				setSecretData(t, client, d)
			}
			later := time.Now().Add(tc.after)
			m.now = func() time.Time { return later }
			if err := m.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			second := secretData(t, client)
			if reason := m.check(second); reason != "" {
				t.Errorf("after reconcile the Secret still fails: %s", reason)
			}
			if got := !bytes.Equal(first[KeyCert], second[KeyCert]); got != tc.newServing {
				t.Errorf("new serving certificate = %v, want %v", got, tc.newServing)
			}
			if got := !bytes.Equal(first[KeyCACert], second[KeyCACert]); got != tc.newCA {
				t.Errorf("new CA = %v, want %v", got, tc.newCA)
			}
			mwc, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "sparklet", metav1.GetOptions{})
			bundle := pemCerts(t, mwc.Webhooks[0].ClientConfig.CABundle)
			want := 1
			if tc.previousCAInBundle {
				want = 2
			}
			if len(bundle) != want || !bytes.Equal(bundle[0].Raw, pemCerts(t, second[KeyCACert])[0].Raw) {
				t.Errorf("caBundle holds %d CAs, want %d with the current first", len(bundle), want)
			}
			// The served certificate verifies against the patched bundle.
			if err := m.load(context.Background()); err != nil {
				t.Fatal(err)
			}
			served, _ := m.GetCertificate(nil)
			leaf, _ := x509.ParseCertificate(served.Certificate[0])
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(mwc.Webhooks[0].ClientConfig.CABundle)
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: m.cfg.ServiceName + "." + ns + ".svc", Roots: roots, CurrentTime: later}); err != nil {
				t.Errorf("served certificate does not verify against the caBundle: %v", err)
			}
		})
	}
}

// TestOneWriterManyServers starts two replicas with leader election: one
// writes the Secret, both serve the same certificate.
func TestOneWriterManyServers(t *testing.T) {
	client := fakeCluster()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newManager(client, true), newManager(client, true)
	if a.cfg.Identity == b.cfg.Identity {
		t.Fatalf("two replicas share the identity %s", a.cfg.Identity)
	}
	errs := make(chan error, 2)
	for _, m := range []*Manager{a, b} {
		go func() { errs <- m.Start(ctx) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ca, _ := a.GetCertificate(nil)
	cb, _ := b.GetCertificate(nil)
	if !bytes.Equal(ca.Certificate[0], cb.Certificate[0]) {
		t.Error("the replicas serve different certificates")
	}
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, a.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := *lease.Spec.HolderIdentity; h != a.cfg.Identity && h != b.cfg.Identity {
		t.Errorf("Lease held by %q", h)
	}
	creates := 0
	for _, w := range writes(client) {
		if w.GetVerb() == "create" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("%d Secret creates, want 1", creates)
	}
}

// TestWaitsForTheWebhookConfiguration: a configuration created after the
// webhook started gets its caBundle on a retry, without a restart.
func TestWaitsForTheWebhookConfiguration(t *testing.T) {
	client := fake.NewClientset()
	m := newManager(client, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatalf("start without a webhook configuration: %v", err)
	}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sparklet"}, Webhooks: []admissionv1.MutatingWebhook{{Name: "pods.sparklet.io"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		mwc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sparklet", metav1.GetOptions{})
		return err == nil && len(mwc.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
	if err != nil {
		t.Fatalf("caBundle never patched: %v", err)
	}
}
