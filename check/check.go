package check

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// WebhookName is the name of sparklet's webhook inside its
// MutatingWebhookConfiguration, as the chart renders it.
const WebhookName = "pods.sparklet.io"

// Options are what a check reads with.
type Options struct {
	Client kubernetes.Interface
	// WebhookConfig, when set, is the only MutatingWebhookConfiguration
	// looked at; otherwise every one with a WebhookName webhook.
	WebhookConfig string
	// Policy is the policy in force; when nil, PolicyError says why.
	Policy       *policy.Policy
	PolicySource string
	PolicyError  error
	Version      string
	// Events is how many of the pod's last Events to show.
	Events int
}

// report collects the lines of one answer.
type report struct {
	w      io.Writer
	indent string
}

func (r *report) line(format string, args ...any) {
	fmt.Fprintf(r.w, r.indent+format+"\n", args...)
}

// webhook is one sparklet webhook found in the cluster.
type webhook struct {
	config string
	hook   admissionv1.MutatingWebhook
}

func (w webhook) String() string { return fmt.Sprintf("webhook %s (%s)", w.config, w.hook.Name) }

func (o Options) webhooks(ctx context.Context) ([]webhook, error) {
	var configs []admissionv1.MutatingWebhookConfiguration
	if o.WebhookConfig != "" {
		c, err := o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, o.WebhookConfig, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read MutatingWebhookConfiguration %s: %w", o.WebhookConfig, err)
		}
		configs = append(configs, *c)
	} else {
		list, err := o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
		}
		configs = list.Items
	}
	var out []webhook
	for _, c := range configs {
		for _, h := range c.Webhooks {
			if h.Name == WebhookName || o.WebhookConfig != "" {
				out = append(out, webhook{config: c.Name, hook: h})
			}
		}
	}
	return out, nil
}

// selectorProblems explains, one string per requirement, why set does not
// satisfy sel; nil when it does.
func selectorProblems(sel *metav1.LabelSelector, set map[string]string) ([]string, error) {
	if sel == nil {
		return nil, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, err
	}
	reqs, _ := s.Requirements()
	var out []string
	for _, r := range reqs {
		if r.Matches(labels.Set(set)) {
			continue
		}
		v, has := set[r.Key()]
		if has {
			out = append(out, fmt.Sprintf("wants %s, has %s=%s", r.String(), r.Key(), v))
		} else {
			out = append(out, fmt.Sprintf("wants %s, has no %s label", r.String(), r.Key()))
		}
	}
	return out, nil
}

func describeSelector(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "everything"
	}
	return metav1.FormatLabelSelector(sel)
}

// createsPods reports whether the webhook is called on pod CREATE.
func createsPods(h admissionv1.MutatingWebhook) bool {
	for _, r := range h.Rules {
		op := slices.Contains(r.Operations, admissionv1.Create) || slices.Contains(r.Operations, admissionv1.OperationAll)
		res := slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "*")
		if op && res {
			return true
		}
	}
	return false
}

// namespaceMatch writes, for each webhook, whether it is called for pods in
// ns, and returns the webhooks that are.
func namespaceMatch(r *report, hooks []webhook, ns *corev1.Namespace) []webhook {
	var matching []webhook
	for _, h := range hooks {
		if !createsPods(h.hook) {
			r.line("%s: not called on pod CREATE (rules %v)", h, h.hook.Rules)
			continue
		}
		problems, err := selectorProblems(h.hook.NamespaceSelector, ns.Labels)
		switch {
		case err != nil:
			r.line("%s: invalid namespaceSelector: %v", h, err)
		case len(problems) > 0:
			r.line("%s: namespace %s does not match its namespaceSelector: %s", h, ns.Name, strings.Join(problems, "; "))
			if slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, vocab.LabelInject+"=enabled") }) {
				r.line("  to opt in: kubectl label namespace %s %s=enabled", ns.Name, vocab.LabelInject)
			}
		default:
			r.line("%s: namespace matches its namespaceSelector (%s)", h, describeSelector(h.hook.NamespaceSelector))
			matching = append(matching, h)
		}
	}
	return matching
}

// policyLines writes where the policy comes from and what applies to ns,
// and whether the driver ServiceAccount it names exists.
func (o Options) policyLines(ctx context.Context, r *report, ns string) {
	if o.Policy == nil {
		r.line("policy: not read: %v", o.PolicyError)
		return
	}
	if _, ok := o.Policy.Namespaces[ns]; ok {
		r.line("policy: %s; its namespaces.%s section applies on top of the cluster rules", o.PolicySource, ns)
	} else {
		r.line("policy: %s; cluster rules only (no namespaces.%s section)", o.PolicySource, ns)
	}
	sa := o.Policy.For(ns).Driver.Defaults.ServiceAccountName
	if sa == "" {
		return
	}
	_, err := o.Client.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.line("driver ServiceAccount %s: missing in %s; drivers that name none get it and fail to start (list the namespace in the chart's namespaces.list)", sa, ns)
	case err != nil:
		r.line("driver ServiceAccount %s: not read: %v", sa, err)
	default:
		r.line("driver ServiceAccount %s: present", sa)
	}
}

// Namespace reports whether driver pods created in ns would be injected.
// It returns whether they would.
func Namespace(ctx context.Context, w io.Writer, o Options, ns string) (bool, error) {
	n, err := o.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	hooks, err := o.webhooks(ctx)
	if err != nil {
		return false, err
	}
	var details strings.Builder
	r := &report{w: &details, indent: "  "}
	matching := namespaceMatch(r, hooks, n)
	if len(hooks) == 0 {
		r.line("no sparklet webhook is registered (no MutatingWebhookConfiguration has a %s webhook): install the chart", WebhookName)
	}
	o.policyLines(ctx, r, ns)
	if o.Policy != nil {
		o.injectedResources(ctx, r, ns, o.Policy.For(ns).Sidecar)
	}
	ok := len(matching) > 0
	if ok {
		fmt.Fprintf(w, "namespace/%s: pods labelled %s=driver will be injected\n", ns, vocab.LabelRole)
	} else {
		fmt.Fprintf(w, "namespace/%s: pods will NOT be injected\n", ns)
	}
	_, err = io.WriteString(w, details.String())
	return ok, err
}
