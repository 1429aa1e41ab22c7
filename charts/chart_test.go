// Package charts tests the Helm chart: lint, render with several value
// sets and check the objects, and apply them to the local control plane.
// Runs with SPARKLET_E2E=1 and helm in SPARKLET_BIN_DIR (make test).
package charts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/internal/localcluster"
	"github.com/sparklet/sparklet/internal/webhookconfig"
	"github.com/sparklet/sparklet/policy"
)

const release, releaseNS = "demo", "sparklet-system"

// kubeVersion is the local control plane's (hack/cluster).
const kubeVersion = "1.37.2"

func helm(t *testing.T) string {
	t.Helper()
	if os.Getenv("SPARKLET_E2E") != "1" {
		t.Skip("set SPARKLET_E2E=1 and SPARKLET_BIN_DIR with helm in it (make test does)")
	}
	h := filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "helm")
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("helm not in SPARKLET_BIN_DIR: %v (hack/helm/build.sh builds it)", err)
	}
	return h
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out.String(), errb.String())
	}
	return out.String()
}

// rendered is helm template's output, by kind and name.
type rendered struct {
	raw  string
	docs map[string][]byte
}

func render(t *testing.T, valueFiles ...string) rendered {
	args := []string{"template", release, "sparklet", "--namespace", releaseNS, "--kube-version", kubeVersion}
	for _, f := range valueFiles {
		args = append(args, "-f", filepath.Join("testdata", f))
	}
	out := run(t, helm(t), args...)
	r := rendered{raw: out, docs: map[string][]byte{}}
	for _, doc := range strings.Split(out, "\n---") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if meta.Kind != "" {
			r.docs[meta.Kind+"/"+meta.Metadata.Namespace+"/"+meta.Metadata.Name] = []byte(doc)
		}
	}
	return r
}

func (r rendered) get(t *testing.T, key string, into any) {
	t.Helper()
	doc, ok := r.docs[key]
	if !ok {
		keys := make([]string, 0, len(r.docs))
		for k := range r.docs {
			keys = append(keys, k)
		}
		t.Fatalf("%s not rendered; have %v", key, keys)
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func TestLint(t *testing.T) {
	run(t, helm(t), "lint", "sparklet", "--strict", "--kube-version", kubeVersion)
	for _, f := range []string{"no-cert-manager.yaml", "namespace-list.yaml", "custom-policy.yaml", "self-managed.yaml"} {
		run(t, helm(t), "lint", "sparklet", "--strict", "--kube-version", kubeVersion, "-f", filepath.Join("testdata", f))
	}
}

func TestWebhookConfiguration(t *testing.T) {
	full := release + "-sparklet"
	want := webhookconfig.Build("x", admissionv1.WebhookClientConfig{}, []string{releaseNS, "kube-system"}).Webhooks[0]
	cases := []struct {
		values      []string
		certManager bool
		list        []string
	}{
		{nil, true, nil},
		{[]string{"no-cert-manager.yaml"}, false, nil},
		{[]string{"namespace-list.yaml"}, true, []string{"team-a", "team-b"}},
		{[]string{"self-managed.yaml"}, false, nil},
	}
	for _, tc := range cases {
		t.Run(strings.Join(append([]string{"default"}, tc.values...), "+"), func(t *testing.T) {
			r := render(t, tc.values...)
			var mwc admissionv1.MutatingWebhookConfiguration
			r.get(t, "MutatingWebhookConfiguration//"+full, &mwc)
			w := mwc.Webhooks[0]
			for what, pair := range map[string][2]any{
				"name": {w.Name, want.Name}, "rules": {w.Rules, want.Rules}, "failurePolicy": {w.FailurePolicy, want.FailurePolicy},
				"sideEffects": {w.SideEffects, want.SideEffects}, "timeoutSeconds": {w.TimeoutSeconds, want.TimeoutSeconds},
				"reinvocationPolicy": {w.ReinvocationPolicy, want.ReinvocationPolicy}, "matchPolicy": {w.MatchPolicy, want.MatchPolicy},
				"admissionReviewVersions": {w.AdmissionReviewVersions, want.AdmissionReviewVersions}, "objectSelector": {w.ObjectSelector, want.ObjectSelector},
			} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Errorf("%s differs from the local control plane's: chart %v, webhookconfig %v", what, pair[0], pair[1])
				}
			}
			exclusions := w.NamespaceSelector.MatchExpressions[len(w.NamespaceSelector.MatchExpressions)-1]
			if !reflect.DeepEqual(exclusions, want.NamespaceSelector.MatchExpressions[0]) {
				t.Errorf("namespace exclusions = %+v", exclusions)
			}
			if tc.list == nil {
				if !reflect.DeepEqual(w.NamespaceSelector.MatchLabels, want.NamespaceSelector.MatchLabels) {
					t.Errorf("namespace label selector = %v", w.NamespaceSelector.MatchLabels)
				}
			} else if in := w.NamespaceSelector.MatchExpressions[0]; in.Operator != "In" || !reflect.DeepEqual(in.Values, tc.list) {
				t.Errorf("namespace list selector = %+v", in)
			}
			_, injected := mwc.Annotations["cert-manager.io/inject-ca-from"]
			if injected != tc.certManager {
				t.Errorf("inject-ca-from present = %v, want %v", injected, tc.certManager)
			}
			self := contains(tc.values, "self-managed.yaml")
			if !tc.certManager && !self && len(w.ClientConfig.CABundle) == 0 {
				t.Error("no caBundle with an existing Secret")
			}
			if self && len(w.ClientConfig.CABundle) != 0 {
				t.Error("a rendered caBundle would fight the webhook's own")
			}
			if w.ClientConfig.Service == nil || w.ClientConfig.Service.Namespace != releaseNS || *w.ClientConfig.Service.Path != "/mutate-pods" {
				t.Errorf("clientConfig = %+v", w.ClientConfig)
			}
			_, hasCert := r.docs["Certificate/"+releaseNS+"/"+full+"-serving"]
			if hasCert != tc.certManager {
				t.Errorf("serving Certificate rendered = %v, want %v", hasCert, tc.certManager)
			}
		})
	}
}

func TestDeploymentIsHardened(t *testing.T) {
	r := render(t)
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+release+"-sparklet", &d)
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext = %+v", sc)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes not on /readyz and /healthz")
	}
	if len(d.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		t.Error("no topology spread")
	}
	if _, ok := r.docs["PodDisruptionBudget/"+releaseNS+"/"+release+"-sparklet"]; !ok {
		t.Error("no PodDisruptionBudget")
	}
}

func TestSelfManagedCertificates(t *testing.T) {
	r := render(t, "self-managed.yaml")
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+release+"-sparklet", &d)
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--cert-mode=self", "--cert-namespace=" + releaseNS, "--service-name=" + release + "-sparklet",
		"--webhook-config-name=" + release + "-sparklet", "--leader-election=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if strings.Contains(args, "--tls-cert-file") || len(d.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("self mode still mounts certificate files: %q, volumes %v", args, d.Spec.Template.Spec.Volumes)
	}
	if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Error("self mode needs the webhook's service-account token")
	}
	var role rbacv1.Role
	r.get(t, "Role/"+releaseNS+"/"+release+"-sparklet-certs", &role)
	if role.Rules[0].ResourceNames[0] != "sparklet-webhook-certs" || !contains(role.Rules[0].Verbs, "update") {
		t.Errorf("certificate Role = %+v", role.Rules)
	}
	var cr rbacv1.ClusterRole
	r.get(t, "ClusterRole//"+release+"-sparklet-webhook-config", &cr)
	if cr.Rules[0].ResourceNames[0] != release+"-sparklet" || !contains(cr.Rules[0].Verbs, "patch") {
		t.Errorf("webhook-config ClusterRole = %+v", cr.Rules)
	}
	for key := range r.docs {
		if strings.HasPrefix(key, "Certificate/") || strings.HasPrefix(key, "Issuer/") {
			t.Errorf("cert-manager object %s rendered in self mode", key)
		}
	}
}

func TestDriverRBAC(t *testing.T) {
	r := render(t, "namespace-list.yaml")
	var cr rbacv1.ClusterRole
	r.get(t, "ClusterRole//"+release+"-sparklet-driver", &cr)
	verbs := map[string][]string{}
	for _, rule := range cr.Rules {
		for _, res := range rule.Resources {
			verbs[res] = rule.Verbs
		}
	}
	for res, need := range map[string][]string{
		"pods": {"get", "list", "watch", "create", "delete", "deletecollection", "patch"}, "configmaps": {"create", "deletecollection"},
		"persistentvolumeclaims": {"create", "list", "deletecollection"}, "services": {"deletecollection"}, "events": {"create"},
	} {
		for _, v := range need {
			if !contains(verbs[res], v) {
				t.Errorf("driver ClusterRole lacks %s on %s", v, res)
			}
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		var rb rbacv1.RoleBinding
		r.get(t, "RoleBinding/"+ns+"/"+release+"-sparklet-driver", &rb)
		if rb.Subjects[0].Name != "spark-driver" || rb.RoleRef.Name != release+"-sparklet-driver" {
			t.Errorf("%s binding = %+v", ns, rb)
		}
		var sa corev1.ServiceAccount
		r.get(t, "ServiceAccount/"+ns+"/spark-driver", &sa)
	}
	if strings.Contains(r.raw, "kind: Role\n") {
		t.Error("the chart grants a Role; the JVM must get nothing")
	}
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func TestPolicyConfigMapParses(t *testing.T) {
	for _, tc := range []struct {
		values              []string
		image, account, key string
	}{
		{nil, "ghcr.io/sparklet/sparklet:0.1.0", "spark-driver", ""},
		{[]string{"custom-policy.yaml"}, "registry.example.com/sparklet:1.2.3", "custom-driver", "spark.eventLog.enabled"},
	} {
		var cm corev1.ConfigMap
		render(t, tc.values...).get(t, "ConfigMap/"+releaseNS+"/"+release+"-sparklet-policy", &cm)
		p, err := policy.Parse([]byte(cm.Data["policy.yaml"]))
		if err != nil {
			t.Fatalf("%v: the rendered policy does not parse: %v\n%s", tc.values, err, cm.Data["policy.yaml"])
		}
		if p.Sidecar.Image != tc.image || p.Driver.Defaults.ServiceAccountName != tc.account {
			t.Errorf("%v: sidecar image %q, driver service account %q", tc.values, p.Sidecar.Image, p.Driver.Defaults.ServiceAccountName)
		}
		if tc.key != "" && p.Spark.Enforced[tc.key] == "" {
			t.Errorf("%v: %s lost", tc.values, tc.key)
		}
	}
}

// TestAppliesToARealAPIServer server-side applies everything the chart
// renders except cert-manager's objects, whose CRDs the local control plane
// does not have.
func TestAppliesToARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: os.Getenv("SPARKLET_BIN_DIR"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, values := range []string{"namespace-list.yaml", "self-managed.yaml"} {
		applyChart(ctx, t, c, render(t, values), values == "namespace-list.yaml")
	}
}

func applyChart(ctx context.Context, t *testing.T, c *localcluster.Cluster, r rendered, withCertManager bool) {
	var docs []string
	for _, ns := range []string{releaseNS, "team-a", "team-b"} {
		docs = append(docs, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}")
	}
	skipped := 0
	for key, doc := range r.docs {
		if strings.HasPrefix(key, "Certificate/") || strings.HasPrefix(key, "Issuer/") {
			skipped++
			continue
		}
		docs = append(docs, string(doc))
	}
	if withCertManager && skipped != 4 {
		t.Errorf("skipped %d cert-manager objects, want 4 (self-signed Issuer, CA Certificate, CA Issuer, serving Certificate)", skipped)
	}
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--field-manager=chart-test", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(docs, "\n---\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the API server refused the chart: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "serverside-applied"); n != len(docs) {
		t.Errorf("%d of %d objects applied:\n%s", n, len(docs), out)
	}
}
