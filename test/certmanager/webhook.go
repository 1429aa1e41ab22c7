package certmanager

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/test/cluster"
)

// The webhook as cert-manager's chart installs it with webhook.url.host
// set (cert-manager v1.21.2, deploy/charts/cert-manager/templates/
// webhook-deployment.yaml, webhook-validating-webhook.yaml and
// webhook-mutating-webhook.yaml): its serving certificate is made by the
// webhook itself from a CA it keeps in the Secret cert-manager/
// cert-manager-webhook-ca, for the name it is reached by, and the
// cainjector copies that CA into both webhook configurations
// (cert-manager.io/inject-ca-from-secret). The API server reaches the
// local process as localhost: an IP address would need an IP SAN, which
// the webhook's dynamic certificates do not carry.
const (
	webhookNamespace = "cert-manager"
	webhookName      = "cert-manager-webhook"
	webhookHost      = "localhost"
)

// startWebhook starts cert-manager-webhook on free ports, registers it
// with the API server and waits until the cainjector has put its CA into
// both configurations.
func (m *CertManager) startWebhook(ctx context.Context) error {
	client := m.opts.Cluster.Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	healthz, err := cluster.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + m.opts.Cluster.Kubeconfig(),
		"--secure-port=" + strconv.Itoa(port), "--healthz-port=" + strconv.Itoa(healthz), "--metrics-listen-address=0",
		"--dynamic-serving-ca-secret-namespace=" + webhookNamespace, "--dynamic-serving-ca-secret-name=" + webhookName + "-ca",
		"--dynamic-serving-dns-names=" + webhookHost}
	if err := m.spawn(webhookName, args); err != nil {
		return err
	}
	host := webhookHost + ":" + strconv.Itoa(port)
	if err := m.registerWebhook(ctx, host); err != nil {
		return err
	}
	if err := m.waitWebhookCA(ctx); err != nil {
		return err
	}
	return m.waitWebhookReady(ctx, healthz)
}

// waitWebhookReady waits until the webhook's /healthz answers 200, which
// it does once it has a serving certificate: the readiness probe of
// cert-manager's chart (webhook-deployment.yaml).
func (m *CertManager) waitWebhookReady(ctx context.Context, healthz int) error {
	url := "http://127.0.0.1:" + strconv.Itoa(healthz) + "/healthz"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("cert-manager's webhook never ready at %s: %w\n%s", url, err, m.Logs(20))
	}
	return nil
}

// registerWebhook creates cert-manager's two webhook configurations,
// pointed at https://host.
func (m *CertManager) registerWebhook(ctx context.Context, host string) error {
	reg := m.opts.Cluster.Client().AdmissionregistrationV1()
	meta := metav1.ObjectMeta{Name: webhookName, Annotations: map[string]string{
		"cert-manager.io/inject-ca-from-secret": webhookNamespace + "/" + webhookName + "-ca"}}
	equivalent, fail, none := admissionv1.Equivalent, admissionv1.Fail, admissionv1.SideEffectClassNone
	client := func(path string) admissionv1.WebhookClientConfig {
		return admissionv1.WebhookClientConfig{URL: ptr.To("https://" + host + path)}
	}
	rule := func(groups []string, ops []admissionv1.OperationType, resource string) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops,
			Rule: admissionv1.Rule{APIGroups: groups, APIVersions: []string{"v1"}, Resources: []string{resource}}}}
	}
	// The chart's default namespaceSelector for validation.
	skip := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "cert-manager.io/disable-validation", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}}}
	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionv1.ValidatingWebhook{{
		Name: "webhook.cert-manager.io", NamespaceSelector: skip,
		Rules:                   rule([]string{"cert-manager.io", "acme.cert-manager.io"}, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, "*/*"),
		AdmissionReviewVersions: []string{"v1"}, MatchPolicy: &equivalent, TimeoutSeconds: ptr.To[int32](30),
		FailurePolicy: &fail, SideEffects: &none, ClientConfig: client("/validate"),
	}}}
	mwc := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionv1.MutatingWebhook{{
		Name:                    "webhook.cert-manager.io",
		Rules:                   rule([]string{"cert-manager.io"}, []admissionv1.OperationType{admissionv1.Create}, "certificaterequests"),
		AdmissionReviewVersions: []string{"v1"}, MatchPolicy: &equivalent, TimeoutSeconds: ptr.To[int32](30),
		FailurePolicy: &fail, SideEffects: &none, ClientConfig: client("/mutate"),
	}}}
	// A configuration left by a killed run points at its port.
	_ = reg.ValidatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	_ = reg.MutatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	if _, err := reg.ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := reg.MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{})
	return err
}

// waitWebhookCA waits until the webhook has written its CA and the
// cainjector has put it into both configurations.
func (m *CertManager) waitWebhookCA(ctx context.Context) error {
	client := m.opts.Cluster.Client()
	reg := client.AdmissionregistrationV1()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		s, err := client.CoreV1().Secrets(webhookNamespace).Get(ctx, webhookName+"-ca", metav1.GetOptions{})
		if err != nil || len(s.Data["ca.crt"]) == 0 {
			return false, nil
		}
		v, err := reg.ValidatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
		if err != nil || !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"]) {
			return false, nil
		}
		mw, err := reg.MutatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
		return err == nil && bytes.Equal(mw.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"]), nil
	})
	if err != nil {
		return fmt.Errorf("cert-manager's webhook CA is not in its webhook configurations: %w\n%s", err, m.Logs(20))
	}
	return nil
}

// unregisterWebhook deletes the webhook configurations: with the webhook
// stopped, they would refuse every write of cert-manager's resources.
func (m *CertManager) unregisterWebhook() {
	reg := m.opts.Cluster.Client().AdmissionregistrationV1()
	_ = reg.ValidatingWebhookConfigurations().Delete(context.Background(), webhookName, metav1.DeleteOptions{})
	_ = reg.MutatingWebhookConfigurations().Delete(context.Background(), webhookName, metav1.DeleteOptions{})
}
