package schedulers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

var kueueCRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// KueueVersion is the only version of Kueue's API the harness installs
// and uses: its CRDs serve it alone, so no conversion webhook is needed.
const KueueVersion = "v1beta2"

// installCRDs creates Kueue's CRDs from bin/kueue-crds, each serving only
// KueueVersion (the bases without the conversion-webhook patches of
// Kueue's kustomize overlay), and waits until they are established.
func (k *Kueue) installCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(k.opts.BinDir, "kueue-crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/kueue-crds: rebuild with hack/kueue/build.sh", k.opts.BinDir)
	}
	var names []string
	for _, f := range files {
		crd, err := kueueCRDVersion(f, KueueVersion)
		if err != nil {
			return err
		}
		if _, err := k.dyn.Resource(kueueCRDs).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
		names = append(names, crd.GetName())
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := k.dyn.Resource(kueueCRDs).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// kueueCRDVersion reads a CRD and keeps only its version version, as the
// storage version.
func kueueCRDVersion(file, version string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	crd := &unstructured.Unstructured{Object: obj}
	versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
	var keep []any
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == version {
			m["served"], m["storage"] = true, true
			keep = append(keep, m)
		}
	}
	if len(keep) != 1 {
		return nil, fmt.Errorf("%s: no version %s", file, version)
	}
	if err := unstructured.SetNestedSlice(obj, keep, "spec", "versions"); err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(obj, "spec", "conversion")
	return crd, nil
}

// The webhook configurations' names are those of Kueue's own install
// (kustomize namePrefix kueue-, and the Helm chart's), so that they run in
// the same order relative to sparklet's.
const (
	kueueMutatingName   = "kueue-mutating-webhook-configuration"
	kueueValidatingName = "kueue-validating-webhook-configuration"
)

// registerWebhooks registers the two webhooks Kueue's pod integration
// needs, as in config/components/webhook/manifests.yaml (v0.19.2):
// mpod.kb.io (defaulting: the managed label, the finalizer, the
// kueue.x-k8s.io/admission scheduling gate) and vpod.kb.io, both
// failurePolicy Fail, called at https://127.0.0.1:<port> and only for the
// labelled namespaces.
func (k *Kueue) registerWebhooks(ctx context.Context) error {
	ca, _ := k.opts.Cluster.CA()
	url := func(path string) admissionv1.WebhookClientConfig {
		u := "https://127.0.0.1:" + strconv.Itoa(k.webhook) + path
		return admissionv1.WebhookClientConfig{URL: &u, CABundle: ca}
	}
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	reinvoke := admissionv1.ReinvocationPolicyType(k.opts.PodWebhookReinvocation)
	timeout := int32(10)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{KueueNamespaceLabel: KueueNamespaceManaged}}
	pods := func(ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	}
	mutating := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueMutatingName},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: "mpod.kb.io", ClientConfig: url("/mutate--v1-pod"), Rules: pods(admissionv1.Create),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: selector, ReinvocationPolicy: &reinvoke, TimeoutSeconds: &timeout,
		}}}
	validating := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueValidatingName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "vpod.kb.io", ClientConfig: url("/validate--v1-pod"), Rules: pods(admissionv1.Create, admissionv1.Update),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: selector, TimeoutSeconds: &timeout,
		}}}
	reg := k.client.AdmissionregistrationV1()
	if _, err := reg.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register Kueue's mutating pod webhook: %w", err)
	}
	if _, err := reg.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register Kueue's validating pod webhook: %w", err)
	}
	return nil
}

func (k *Kueue) unregisterWebhooks(ctx context.Context) {
	reg := k.client.AdmissionregistrationV1()
	_ = reg.MutatingWebhookConfigurations().Delete(ctx, kueueMutatingName, metav1.DeleteOptions{})
	_ = reg.ValidatingWebhookConfigurations().Delete(ctx, kueueValidatingName, metav1.DeleteOptions{})
}

// SetPodWebhookReinvocation changes the reinvocationPolicy of Kueue's
// mutating pod webhook (IfNeeded or Never). The API server picks the
// change up shortly after.
func (k *Kueue) SetPodWebhookReinvocation(ctx context.Context, policy admissionv1.ReinvocationPolicyType) error {
	patch := fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/reinvocationPolicy","value":%q}]`, policy)
	_, err := k.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, kueueMutatingName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set reinvocationPolicy of %s: %w", kueueMutatingName, err)
	}
	k.opts.PodWebhookReinvocation = string(policy)
	return nil
}
