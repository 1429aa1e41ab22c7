package certmanager

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// probeNamespace holds the objects with which Start checks cert-manager.
const probeNamespace = "cert-manager-probe"

// probe checks the webhook, the controller and the cainjector end to end:
// the API server refuses, through the webhook, a Certificate shorter than
// cert-manager's minimum; a self-signed Issuer signs a CA Certificate, and the cainjector copies its
// CA into a ValidatingWebhookConfiguration that names it in
// cert-manager.io/inject-ca-from. The configuration's one webhook matches
// no resource the API serves and ignores failures, so it never takes part
// in an admission; it is deleted once the CA is in.
func (m *CertManager) probe(ctx context.Context) error {
	client := m.opts.Cluster.Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	issuer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
		"metadata": map[string]any{"name": "probe", "namespace": probeNamespace},
		"spec":     map[string]any{"selfSigned": map[string]any{}},
	}}
	crt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "probe", "namespace": probeNamespace},
		"spec": map[string]any{"isCA": true, "commonName": "probe", "secretName": "probe",
			"issuerRef": map[string]any{"name": "probe", "kind": "Issuer"}},
	}}
	if err := m.probeWebhook(ctx); err != nil {
		return err
	}
	for _, o := range []struct {
		obj *unstructured.Unstructured
		res schema.GroupVersionResource
	}{{issuer, Issuers}, {crt, Certificates}} {
		if _, err := m.dyn.Resource(o.res).Namespace(probeNamespace).Create(ctx, o.obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/probe: %w", o.obj.GetKind(), probeNamespace, err)
		}
		if err := m.WaitReady(ctx, o.res, probeNamespace, "probe", 2*time.Minute); err != nil {
			return fmt.Errorf("cert-manager does not make the probe %s Ready: %w", o.obj.GetKind(), err)
		}
	}
	return m.probeInjection(ctx)
}

// probeWebhook creates a Certificate of one minute, which only
// cert-manager's webhook refuses (its schema allows any duration; cert-
// manager v1.21, internal/apis/certmanager/validation/certificate.go:
// "certificate duration must be greater than 1h0m0s").
func (m *CertManager) probeWebhook(ctx context.Context) error {
	crt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "probe-too-short", "namespace": probeNamespace},
		"spec": map[string]any{"commonName": "probe", "secretName": "probe-too-short", "duration": "1m",
			"issuerRef": map[string]any{"name": "probe", "kind": "Issuer"}},
	}}
	_, err := m.dyn.Resource(Certificates).Namespace(probeNamespace).Create(ctx, crt, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), `admission webhook "webhook.cert-manager.io" denied`) ||
		!strings.Contains(err.Error(), "certificate duration must be greater than") {
		return fmt.Errorf("a Certificate of one minute: got %v, want cert-manager's webhook to refuse it\n%s", err, m.Logs(20))
	}
	return nil
}

func (m *CertManager) probeInjection(ctx context.Context) error {
	client := m.opts.Cluster.Client()
	secret, err := client.CoreV1().Secrets(probeNamespace).Get(ctx, "probe", metav1.GetOptions{})
	if err != nil {
		return err
	}
	url, ignore, none := "https://127.0.0.1:1/never-called", admissionv1.Ignore, admissionv1.SideEffectClassNone
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: probeNamespace, Annotations: map[string]string{
			"cert-manager.io/inject-ca-from": probeNamespace + "/probe"}},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "probe.cert-manager.sparklet.io", ClientConfig: admissionv1.WebhookClientConfig{URL: &url},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"probe.sparklet.io"}, APIVersions: []string{"v1"}, Resources: []string{"probes"}}}},
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	reg := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := reg.Create(ctx, vwc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = reg.Delete(context.Background(), probeNamespace, metav1.DeleteOptions{}) }()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		got, err := reg.Get(ctx, probeNamespace, metav1.GetOptions{})
		return err == nil && bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, secret.Data["ca.crt"]), nil
	})
	if err != nil {
		return fmt.Errorf("cert-manager's cainjector does not inject the probe's CA: %w\n%s", err, m.Logs(20))
	}
	return nil
}
