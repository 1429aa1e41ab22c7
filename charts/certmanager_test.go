package charts

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/test/certmanager"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// certManagerBinDir is SPARKLET_CERTMANAGER_BIN_DIR, where
// hack/certmanager/build.sh put cert-manager (make certmanager-binary),
// else SPARKLET_BIN_DIR. Without that variable and with no cert-manager in
// SPARKLET_BIN_DIR the test is skipped.
func certManagerBinDir(t *testing.T) string {
	if dir := os.Getenv("SPARKLET_CERTMANAGER_BIN_DIR"); dir != "" {
		return dir
	}
	dir := binDir(t)
	for _, f := range certmanager.Binaries {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("no %s in SPARKLET_BIN_DIR: make certmanager-binary puts cert-manager there; or build it with hack/certmanager/build.sh DIR and set SPARKLET_CERTMANAGER_BIN_DIR=DIR", f)
		}
	}
	return dir
}

// TestCertManagerMode installs the chart in its default mode, cert-manager,
// on the local control plane with a real cert-manager (controller,
// cainjector and webhook, test/certmanager) and runs the webhook's replicas as local
// processes from the Secret cert-manager writes, mounted as the kubelet
// mounts it. It checks that the chart's Issuers and Certificates become
// Ready, that the cainjector puts the CA into the chart's
// MutatingWebhookConfiguration, that the replicas serve the Secret's
// certificate and the API server's admissions through them inject drivers,
// and that after a renewal every replica serves the new certificate
// without a restart while admissions go on succeeding.
//
// What is changed from the rendering: the API server calls the first
// replica at its loopback address instead of the Service (no Service
// reaches a local process), and the serving Certificate also names
// 127.0.0.1, which that address needs.
func TestCertManagerMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmBin := certManagerBinDir(t)
	c, err := cluster.Start(ctx, cluster.Options{BinDir: binDir(t), Dir: t.TempDir(), NoKwok: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cm, err := certmanager.Start(ctx, certmanager.Options{BinDir: cmBin, Dir: t.TempDir(), Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cert-manager logs:\n%s", cm.Logs(40))
		}
		cm.Stop()
	})

	full := release + "-sparklet"
	r := render(t, "namespace-list.yaml")
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+full, &d)
	var policyCM corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+full+"-policy", &policyCM)
	ports := freePorts(t, int(*d.Spec.Replicas))
	docs := append(namespaceDocs(), localCertManagerDocs(t, r, full, ports[0])...)
	apply(ctx, t, c, docs)

	started := time.Now()
	for _, o := range []struct{ kind, name string }{
		{"issuers", full + "-selfsigned"}, {"certificates", full + "-ca"}, {"issuers", full + "-ca"}, {"certificates", full + "-serving"},
	} {
		gvr := certmanager.Certificates
		if o.kind == "issuers" {
			gvr = certmanager.Issuers
		}
		if err := cm.WaitReady(ctx, gvr, releaseNS, o.name, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	issued := time.Since(started)

	// The cainjector copies the Secret's ca.crt, the chart's CA, into
	// the webhook configuration.
	client := c.Client()
	secret, bundle, err := cm.WaitChartCA(ctx, releaseNS, full)
	if err != nil {
		t.Fatal(err)
	}
	injected := time.Since(started)

	tlsDir := t.TempDir()
	projCtx, stopProjection := context.WithCancel(ctx)
	projected, err := projectSecret(projCtx, c, releaseNS, full+"-tls", tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProjection(); <-projected })
	exited := runReplicas(ctx, t, c, releaseNS, full, &d, policyCM.Data["policy.yaml"], ports, tlsDir)
	first := leafSerial(t, secret.Data["tls.crt"])
	if err := waitServed(ctx, ports, bundle, first); err != nil {
		t.Fatalf("the replicas do not serve the Secret's certificate: %v", err)
	}
	pod := fixtures.LoadPod(t, "../examples/spark-pi-pod.yaml")
	admit := func(ctx context.Context) error {
		got, err := client.CoreV1().Pods("team-a").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if got.Annotations[vocab.AnnotationStatus] == "" {
			return fmt.Errorf("driver admitted but not injected")
		}
		return nil
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return admit(ctx) == nil, nil
	})
	if err != nil {
		t.Fatalf("drivers are not injected through the API server: %v", admit(ctx))
	}
	t.Logf("Issuers and Certificates Ready %s after apply, CA injected at %s, first driver injected at %s",
		issued.Round(time.Millisecond), injected.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))

	// Admissions go on through the API server while cert-manager renews.
	admissions := certmanager.Repeat(ctx, 250*time.Millisecond, admit)
	renewed := time.Now()
	renewal, err := cm.RenewAndWait(ctx, releaseNS, full+"-serving", full+"-tls")
	if err != nil {
		admissions.Stop()
		t.Fatal(err)
	}
	if err := waitServed(ctx, ports, bundle, renewal.New); err != nil {
		t.Fatalf("the replicas do not serve the renewed certificate: %v", err)
	}
	served := time.Since(renewed)
	// One more admission through the API server after the switch.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return admit(ctx) == nil, nil
	})
	ok, failed, lastErr := admissions.Stop()
	if err != nil {
		t.Errorf("drivers are not injected after the renewal: %v", admit(ctx))
	}
	if failed > 0 || ok == 0 {
		t.Errorf("%d of %d admissions during the renewal failed, the last: %v", failed, failed+ok, lastErr)
	}
	for i, done := range exited {
		select {
		case <-done:
			t.Errorf("replica %d exited during the renewal", i)
		default:
		}
	}
	if err := cm.Running(); err != nil {
		t.Error(err)
	}
	m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, full, metav1.GetOptions{})
	if err != nil || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Errorf("the caBundle changed with the serving certificate's renewal (the CA did not): %v", err)
	}
	t.Logf("renewal: serial %x -> %x; the Secret updated %s after the Issuing condition was set, both replicas serving it %s after; %d admissions through the API server meanwhile, none failed",
		renewal.Old, renewal.New, renewal.Took.Round(time.Millisecond), served.Round(time.Millisecond), ok)
}

// localCertManagerDocs are the rendered objects helm would install (hooks
// left to their time) with the two changes TestCertManagerMode names.
func localCertManagerDocs(t *testing.T, r rendered, full string, port int) []string {
	t.Helper()
	var docs []string
	for key, doc := range r.docs {
		if isHook(t, doc) {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		switch key {
		case "MutatingWebhookConfiguration//" + full:
			url := fmt.Sprintf("https://127.0.0.1:%d/mutate-pods", port)
			obj["webhooks"].([]any)[0].(map[string]any)["clientConfig"] = map[string]any{"url": url}
		case "Certificate/" + releaseNS + "/" + full + "-serving":
			obj["spec"].(map[string]any)["ipAddresses"] = []any{"127.0.0.1"}
		default:
			docs = append(docs, string(doc))
			continue
		}
		changed, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(changed))
	}
	if n := strings.Count(strings.Join(docs, "\n"), "kind: Certificate\n"); n != 2 {
		t.Fatalf("rendered %d Certificates, want the CA's and the serving one", n)
	}
	return docs
}

// leafSerial is the serial number of the first certificate in certPEM.
func leafSerial(t *testing.T, certPEM []byte) *big.Int {
	t.Helper()
	serial, err := certmanager.Serial(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return serial
}

// waitServed waits until every replica serves, verified against bundle
// for 127.0.0.1, the certificate with serial. The webhook reloads its
// files every 10 seconds.
func waitServed(ctx context.Context, ports []int, bundle []byte, serial *big.Int) error {
	addrs := make([]string, len(ports))
	for i, port := range ports {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return certmanager.WaitServed(ctx, addrs, bundle, "127.0.0.1", serial)
}
