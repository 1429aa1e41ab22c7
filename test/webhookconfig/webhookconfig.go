package webhookconfig

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
	"github.com/sparklet/sparklet/webhook"
)

// Names and selectors shared by the chart and the local control plane.
const (
	WebhookName      = "pods.sparklet.io"
	Path             = webhook.MutatePath
	NamespaceLabel   = vocab.LabelInject
	NamespaceOptIn   = "enabled"
	TimeoutSeconds   = 5
	namespaceNameKey = "kubernetes.io/metadata.name"
)

// Build returns the configuration named name, calling the webhook through
// client, never for the namespaces in exclude (its own and kube-system).
func Build(name string, client admissionv1.WebhookClientConfig, exclude []string) *admissionv1.MutatingWebhookConfiguration {
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	ifNeeded := admissionv1.IfNeededReinvocationPolicy
	equivalent := admissionv1.Equivalent
	timeout := int32(TimeoutSeconds)
	scope := admissionv1.NamespacedScope
	return &admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: client,
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope,
				},
			}},
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &ifNeeded,
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{vocab.LabelRole: "driver"}},
			NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{NamespaceLabel: NamespaceOptIn},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: namespaceNameKey, Operator: metav1.LabelSelectorOpNotIn, Values: exclude,
				}},
			},
		}},
	}
}
