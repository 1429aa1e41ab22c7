package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/ready"
	"github.com/sparklet/sparklet/test/webhookconfig"
)

// TestSelfManagedCertificates runs a second webhook in the chart's
// fallback mode: it creates its own CA and certificate in a Secret, patches
// the CA into its own webhook configuration, and then injects drivers.
func TestSelfManagedCertificates(t *testing.T) {
	ctx := ctxFor(t)
	const certNS, config, optIn = "sparklet-self", "sparklet-self", "sparklet.io/inject-self"
	if err := env.CreateNamespace(ctx, certNS, false); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	url := "https://" + addr + webhookconfig.Path
	mwc := webhookconfig.Build(config, admissionv1.WebhookClientConfig{URL: &url}, []string{certNS, "kube-system"})
	mwc.Webhooks[0].NamespaceSelector.MatchLabels = map[string]string{optIn: "enabled"}
	if _, err := env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), config, metav1.DeleteOptions{})
	})
	policy, _ := filepath.Abs("../examples/policy.yaml")
	logFile := filepath.Join(t.TempDir(), "webhook.log")
	log, _ := os.Create(logFile)
	cmd := exec.Command(filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet"), "webhook", "--listen", addr, "--policy", policy,
		"--cert-mode=self", "--cert-namespace", certNS, "--cert-secret", "certs", "--service-name", "sparklet",
		"--webhook-config-name", config, "--cert-extra-sans", "127.0.0.1", "--leader-election=true", "--kubeconfig", env.Cluster.Kubeconfig())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(logFile)
			t.Logf("webhook log:\n%s", data)
		}
	})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, config, metav1.GetOptions{})
		if err != nil || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, nil
		}
		return ready.OK("https://" + addr + "/readyz"), nil
	})
	if err != nil {
		t.Fatalf("the webhook did not set up its certificate and caBundle: %v", err)
	}
	secret, err := env.Client.CoreV1().Secrets(certNS).Get(ctx, "certs", metav1.GetOptions{})
	if err != nil || len(secret.Data["ca.crt"]) == 0 {
		t.Fatalf("Secret: %v", err)
	}

	ns := namespace(t, false) + "-self"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{optIn: "enabled"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: testenv.DriverServiceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	// The API server picks up the patched caBundle asynchronously.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		pod = p
		return len(p.Spec.InitContainers) > 0, nil
	})
	if err != nil {
		t.Fatalf("no injection through the self-managed certificate: %v", err)
	}
	requireInjected(t, pod)
	t.Logf("caBundle %d bytes; injected %s", len(secret.Data["ca.crt"]), pod.Name)
}
