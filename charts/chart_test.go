package charts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/test/webhookconfig"
	"github.com/sparklet/sparklet/vocab"
)

const release, releaseNS = "demo", "sparklet-system"

// kubeVersion is the local control plane's (hack/cluster).
const kubeVersion = "1.37.2"

func helm(t *testing.T) string {
	t.Helper()
	h := filepath.Join(e2egate.BinDir(t, "with helm in it"), "helm")
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
	return parse(t, run(t, helm(t), args...))
}

// parse splits helm template's output into documents by kind and name.
func parse(t *testing.T, out string) rendered {
	t.Helper()
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
	for _, f := range []string{"no-cert-manager.yaml", "namespace-list.yaml", "custom-policy.yaml", "self-managed.yaml", "issuer-ref.yaml", "service-monitor.yaml", "overrides.yaml", "pod-monitor.yaml", "ui-ingress.yaml", "grpc-route.yaml", "history-server.yaml"} {
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

// certificate is the part of a cert-manager Certificate the chart sets.
type certificate struct {
	Metadata struct{ Name string } `json:"metadata"`
	Spec     struct {
		IsCA       bool     `json:"isCA"`
		SecretName string   `json:"secretName"`
		DNSNames   []string `json:"dnsNames"`
		IssuerRef  struct{ Name, Kind, Group string }
	} `json:"spec"`
}

func (r rendered) unstructured(t *testing.T, key string, into any) {
	t.Helper()
	doc, ok := r.docs[key]
	if !ok {
		t.Fatalf("%s not rendered", key)
	}
	if err := yaml.Unmarshal(doc, into); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

// TestCertManagerChain follows the default chain (self-signed Issuer, CA
// Certificate, CA Issuer, serving Certificate) and a user issuerRef, to
// the Secret the Deployment mounts and the MWC's inject-ca-from.
func TestCertManagerChain(t *testing.T) {
	full := release + "-sparklet"
	svc := []string{full, full + "." + releaseNS, full + "." + releaseNS + ".svc", full + "." + releaseNS + ".svc.cluster.local"}
	for _, tc := range []struct {
		values     []string
		issuer     string // of the serving Certificate
		kind       string
		selfSigned bool
	}{
		{nil, full + "-ca", "Issuer", true},
		{[]string{"issuer-ref.yaml"}, "corp-ca", "ClusterIssuer", false},
	} {
		r := render(t, tc.values...)
		var serving certificate
		r.unstructured(t, "Certificate/"+releaseNS+"/"+full+"-serving", &serving)
		if !reflect.DeepEqual(serving.Spec.DNSNames, svc) || serving.Spec.IsCA {
			t.Errorf("%v: serving Certificate names %v, want %v", tc.values, serving.Spec.DNSNames, svc)
		}
		if serving.Spec.IssuerRef.Name != tc.issuer || serving.Spec.IssuerRef.Kind != tc.kind {
			t.Errorf("%v: serving Certificate issued by %+v", tc.values, serving.Spec.IssuerRef)
		}
		var mwc admissionv1.MutatingWebhookConfiguration
		r.get(t, "MutatingWebhookConfiguration//"+full, &mwc)
		if got := mwc.Annotations["cert-manager.io/inject-ca-from"]; got != releaseNS+"/"+serving.Metadata.Name {
			t.Errorf("%v: inject-ca-from %q, want the serving Certificate", tc.values, got)
		}
		var d appsv1.Deployment
		r.get(t, "Deployment/"+releaseNS+"/"+full, &d)
		mounted := ""
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				mounted = v.Secret.SecretName
			}
		}
		if mounted != serving.Spec.SecretName {
			t.Errorf("%v: Deployment mounts Secret %q, the Certificate writes %q", tc.values, mounted, serving.Spec.SecretName)
		}
		if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%v: the webhook needs no API access with cert-manager, yet mounts a token", tc.values)
		}
		_, hasSelfSigned := r.docs["Issuer/"+releaseNS+"/"+full+"-selfsigned"]
		if hasSelfSigned != tc.selfSigned {
			t.Errorf("%v: self-signed Issuer rendered = %v", tc.values, hasSelfSigned)
		}
		if !tc.selfSigned {
			continue
		}
		var ca certificate
		r.unstructured(t, "Certificate/"+releaseNS+"/"+full+"-ca", &ca)
		var caIssuer struct {
			Spec struct {
				CA struct {
					SecretName string `json:"secretName"`
				} `json:"ca"`
			} `json:"spec"`
		}
		r.unstructured(t, "Issuer/"+releaseNS+"/"+full+"-ca", &caIssuer)
		if !ca.Spec.IsCA || ca.Spec.IssuerRef.Name != full+"-selfsigned" || caIssuer.Spec.CA.SecretName != ca.Spec.SecretName {
			t.Errorf("CA chain broken: CA Certificate %+v, CA Issuer reads %q", ca.Spec, caIssuer.Spec.CA.SecretName)
		}
	}
}

// TestBadValuesAreRefused: wrong values fail at install with a message
// that names the value.
func TestBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"namespaces.selector=list"}, "namespaces.list"},
		{[]string{"namespaces.selector=all"}, "/namespaces/selector"},
		{[]string{"namespaces.list={Team_A}"}, "/namespaces/list/0"},
		{[]string{"namespaces.selector=list", "namespaces.list={team-a,kube-system}"}, "namespaces.list must not name kube-system"},
		{[]string{"namespaces.selector=list", "namespaces.list={" + releaseNS + "}"}, "namespaces.list must not name " + releaseNS},
		{[]string{"webhook.failurePolicy=Open"}, "failurePolicy"},
		{[]string{"webhook.timeoutSeconds=60"}, "timeoutSeconds"},
		{[]string{"webhook.replicas=0"}, "replicas"},
		{[]string{"tls.certManager.enabled=false", "tls.existingSecret=mine"}, "tls.caBundle"},
		{[]string{"webhook.unknown=1"}, "unknown"},
		{[]string{"driver.serviceAccountName="}, "serviceAccountName"},
		{[]string{"tls.certManager.issuerRef.kind=ClusterIssuer"}, "issuerRef"},
	} {
		checkRefused(t, tc.set, tc.want, "--kube-version", kubeVersion)
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
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.StartupProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes not on /readyz and /healthz")
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port.StrVal != c.Ports[0].Name {
			t.Errorf("probe %+v is not HTTPS on the webhook port", p.HTTPGet)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v", c.Resources)
	}
	if psc := d.Spec.Template.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil {
		t.Errorf("pod securityContext = %+v", psc)
	}
	if len(d.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		t.Error("no topology spread")
	}
	if _, ok := r.docs["PodDisruptionBudget/"+releaseNS+"/"+release+"-sparklet"]; !ok {
		t.Error("no PodDisruptionBudget")
	}
}

// TestServiceMonitorSelectsTheService: the ServiceMonitor selects the
// webhook's Service by labels it carries, scrapes a port it names, and
// trusts the CA the serving certificate comes from.
func TestServiceMonitorSelectsTheService(t *testing.T) {
	full := release + "-sparklet"
	for _, tc := range []struct {
		values []string
		caFrom string
	}{
		{[]string{"service-monitor.yaml"}, full + "-tls"},
		{[]string{"service-monitor.yaml", "self-managed.yaml"}, "sparklet-webhook-certs"},
	} {
		r := render(t, tc.values...)
		var sm struct {
			Spec struct {
				Selector  metav1.LabelSelector `json:"selector"`
				Endpoints []struct {
					Port, Path, Interval string
					TLSConfig            struct {
						ServerName string `json:"serverName"`
						CA         struct {
							Secret struct{ Name, Key string } `json:"secret"`
						} `json:"ca"`
					} `json:"tlsConfig"`
				} `json:"endpoints"`
			} `json:"spec"`
		}
		r.unstructured(t, "ServiceMonitor/"+releaseNS+"/"+full, &sm)
		var svc corev1.Service
		r.get(t, "Service/"+releaseNS+"/"+full, &svc)
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				t.Errorf("%v: ServiceMonitor selects %s=%s, the Service has %q", tc.values, k, v, svc.Labels[k])
			}
		}
		e := sm.Spec.Endpoints[0]
		if e.Port != svc.Spec.Ports[0].Name || e.Path != "/metrics" || e.Interval != "15s" {
			t.Errorf("%v: endpoint %+v", tc.values, e)
		}
		if e.TLSConfig.CA.Secret.Name != tc.caFrom || e.TLSConfig.ServerName != full+"."+releaseNS+".svc" {
			t.Errorf("%v: tlsConfig %+v, want the CA from %s", tc.values, e.TLSConfig, tc.caFrom)
		}
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
			if g := rule.APIGroups[0]; g != "" {
				res = g + "/" + res
			}
			verbs[res] = rule.Verbs
		}
	}
	for res, need := range map[string][]string{
		"pods": {"get", "list", "watch", "create", "delete", "deletecollection", "patch"}, "configmaps": {"create", "deletecollection"},
		"persistentvolumeclaims": {"create", "get", "list", "patch", "deletecollection"}, "services": {"create", "patch", "deletecollection"}, "events": {"create"},
		"pods/status": {"patch"}, "pods/resize": {"patch"}, "resourcequotas": {"list"}, "metrics.k8s.io/pods": {"get"},
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
	var scRole rbacv1.ClusterRole
	r.get(t, "ClusterRole//"+release+"-sparklet-driver-storageclasses", &scRole)
	if len(scRole.Rules) != 1 || scRole.Rules[0].Resources[0] != "storageclasses" || strings.Join(scRole.Rules[0].Verbs, ",") != "get" {
		t.Errorf("storageclasses ClusterRole = %+v, want get on storageclasses only", scRole.Rules)
	}
	var scBinding rbacv1.ClusterRoleBinding
	r.get(t, "ClusterRoleBinding//"+release+"-sparklet-driver-storageclasses", &scBinding)
	if len(scBinding.Subjects) != 2 || scBinding.Subjects[0].Namespace != "team-a" || scBinding.Subjects[1].Namespace != "team-b" ||
		scBinding.Subjects[0].Name != "spark-driver" {
		t.Errorf("storageclasses ClusterRoleBinding subjects = %+v, want spark-driver of team-a and team-b", scBinding.Subjects)
	}
	// The one Role in a driver namespace is helm test's (TestHelmTestHook).
	for key := range r.docs {
		if kind, name, _ := strings.Cut(key, "/"); kind == "Role" && !strings.HasSuffix(name, "/"+release+"-sparklet-test") {
			t.Errorf("the chart grants %s; the JVM must get nothing", key)
		}
	}
}

// TestDriverRBACGRPCRoute: the driver may create, get and patch
// GRPCRoutes only when the policy, the cluster's or a namespace's, asks
// for them (connect.grpcRoute).
func TestDriverRBACGRPCRoute(t *testing.T) {
	for values, want := range map[string]string{"namespace-list.yaml": "", "grpc-route.yaml": "create,get,patch"} {
		var cr rbacv1.ClusterRole
		render(t, values).get(t, "ClusterRole//"+release+"-sparklet-driver", &cr)
		var got string
		for _, rule := range cr.Rules {
			if rule.APIGroups[0] == "gateway.networking.k8s.io" && rule.Resources[0] == "grpcroutes" {
				got = strings.Join(rule.Verbs, ",")
			}
		}
		if got != want {
			t.Errorf("%s: verbs on grpcroutes %q, want %q", values, got, want)
		}
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
		{[]string{"history-server.yaml"}, "ghcr.io/sparklet/sparklet:0.1.0", "spark-driver", ""},
	} {
		var cm corev1.ConfigMap
		render(t, tc.values...).get(t, "ConfigMap/"+releaseNS+"/"+release+"-sparklet-policy", &cm)
		p, err := policy.Parse([]byte(cm.Data["policy.yaml"]), "dev")
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
// does not have, then runs the self-managed mode end to end on it.
func TestAppliesToARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := cluster.StartForTest(ctx, t, binDir(t))
	for _, values := range [][]string{nil, {"namespace-list.yaml"}, {"custom-policy.yaml"}, {"no-cert-manager.yaml"}, {"issuer-ref.yaml"}, {"keep-failed.yaml"}} {
		r := render(t, values...)
		want := map[bool]int{true: 4, false: 0}[r.certManager()]
		if contains(values, "issuer-ref.yaml") {
			want = 1 // the serving Certificate only
		}
		applyChart(ctx, t, c, r.docs, want)
	}
	// keep-failed.yaml's grant to reap kept executors is cluster-wide
	// (namespaces by label); the self-managed run below checks the
	// per-namespace one of a namespace list.
	if err := c.Client().RbacV1().ClusterRoleBindings().Delete(ctx, release+"-sparklet-kept-executors", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("helm install", func(t *testing.T) { helmInstall(ctx, t, c) })
	// Switching the release to self-managed certificates is an upgrade
	// of the same objects; then the webhook runs from what was rendered.
	t.Run("self-managed end to end", func(t *testing.T) { selfManagedEndToEnd(ctx, t, c) })
}

func binDir(t *testing.T) string {
	helm(t) // skips without SPARKLET_E2E
	return os.Getenv("SPARKLET_BIN_DIR")
}

func (r rendered) certManager() bool {
	for key := range r.docs {
		if strings.HasPrefix(key, "Certificate/") {
			return true
		}
	}
	return false
}

// isHook tells whether a rendered document is a helm hook.
func isHook(t *testing.T, doc []byte) bool {
	t.Helper()
	var meta struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
	}
	_, ok := meta.Metadata.Annotations["helm.sh/hook"]
	return ok
}

// applyChart applies docs, minus the cert-manager objects, of which it
// expects certManagerObjects.
func applyChart(ctx context.Context, t *testing.T, c *cluster.Cluster, rendered map[string][]byte, certManagerObjects int) {
	t.Helper()
	docs := namespaceDocs()
	skipped := 0
	for key, doc := range rendered {
		if strings.HasPrefix(key, "Certificate/") || strings.HasPrefix(key, "Issuer/") {
			skipped++
			continue
		}
		if isHook(t, doc) {
			continue // helm runs hooks (the policy check, helm test) at their time, not with the release
		}
		docs = append(docs, string(doc))
	}
	if skipped != certManagerObjects {
		t.Errorf("skipped %d cert-manager objects, want %d", skipped, certManagerObjects)
	}
	apply(ctx, t, c, docs)
}

// apply server-side applies docs and checks that every one was applied.
func apply(ctx context.Context, t *testing.T, c *cluster.Cluster, docs []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "--field-manager=chart-test", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(docs, "\n---\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the API server refused the chart: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "serverside-applied"); n != len(docs) {
		t.Errorf("%d of %d objects applied:\n%s", n, len(docs), out)
	}
}

// namespaceDocs are the release's namespace and the listed ones.
func namespaceDocs() []string {
	var docs []string
	for _, ns := range []string{releaseNS, "team-a", "team-b"} {
		docs = append(docs, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}")
	}
	return docs
}

// helmInstall installs and uninstalls a second release with helm itself
// (self-managed certificates, as cert-manager's CRDs are not here) and
// checks that NOTES tell how to opt in and run a driver.
func helmInstall(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	const rel, ns = "second", "sparklet-second"
	h := helm(t)
	out := run(t, h, "install", rel, "sparklet", "--namespace", ns, "--create-namespace", "--kubeconfig", c.Kubeconfig(),
		"-f", filepath.Join("testdata", "self-managed.yaml"), "--wait=false")
	notes := out[strings.Index(out, "NOTES:"):]
	for _, want := range []string{
		"kubectl -n " + ns + " rollout status deployment/" + rel + "-sparklet",
		"kubectl label namespace <ns> sparklet.io/inject=enabled",
		"--clusterrole=" + rel + "-sparklet-driver",
		"spark-role: driver",
		"Secret sparklet-webhook-certs",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	if _, err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, rel+"-sparklet", metav1.GetOptions{}); err != nil {
		t.Errorf("after helm install: %v", err)
	}
	run(t, h, "uninstall", rel, "--namespace", ns, "--kubeconfig", c.Kubeconfig(), "--wait")
	if _, err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, rel+"-sparklet", metav1.GetOptions{}); err == nil {
		t.Error("helm uninstall left the MutatingWebhookConfiguration")
	}
}

// selfManagedEndToEnd applies the self-managed rendering with the webhook
// configuration pointed at 127.0.0.1 (there is no in-cluster Service here)
// and runs the Deployment's replicas as local processes, with the
// Deployment's own arguments and the chart's service account's token, so
// that the chart's RBAC is what they work with. A driver pod in a listed
// namespace is then injected through them.
func selfManagedEndToEnd(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	full := release + "-sparklet"
	r := render(t, "self-managed.yaml", "namespace-list.yaml", "keep-failed.yaml")
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+full, &d)
	var cm corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+full+"-policy", &cm)

	replicas := int(*d.Spec.Replicas)
	ports := freePorts(t, replicas)
	// The only change to what the chart rendered: the API server calls
	// the first replica at its loopback address.
	var mwc map[string]any
	if err := yaml.Unmarshal(r.docs["MutatingWebhookConfiguration//"+full], &mwc); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/mutate-pods", ports[0])
	mwc["webhooks"].([]any)[0].(map[string]any)["clientConfig"] = map[string]any{"url": url}
	local, err := yaml.Marshal(mwc)
	if err != nil {
		t.Fatal(err)
	}
	docs := maps.Clone(r.docs)
	docs["MutatingWebhookConfiguration//"+full] = local
	applyChart(ctx, t, c, docs, 0)

	checkRBAC(ctx, t, c)
	runReplicas(ctx, t, c, releaseNS, full, &d, cm.Data["policy.yaml"], ports, "")

	// The caBundle appears and every replica serves a certificate that
	// verifies against it for 127.0.0.1: the one in the Secret.
	started := time.Now()
	client := c.Client()
	var bundle []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, full, metav1.GetOptions{})
		if err != nil || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, nil
		}
		bundle = m.Webhooks[0].ClientConfig.CABundle
		for _, port := range ports {
			if _, err := servedLeaf(port, bundle); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the webhook did not set up its certificate and caBundle: %v", err)
	}
	secret, err := client.CoreV1().Secrets(releaseNS).Get(ctx, "sparklet-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range ports {
		leaf, err := servedLeaf(port, bundle)
		if err != nil {
			t.Fatal(err)
		}
		if block, _ := pem.Decode(secret.Data["tls.crt"]); block == nil || !bytes.Equal(block.Bytes, leaf.Raw) {
			t.Errorf("replica on port %d does not serve the Secret's certificate", port)
		}
	}
	serving := time.Since(started)
	lease, err := client.CoordinationV1().Leases(releaseNS).Get(ctx, "sparklet-webhook-certs-writer", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("no Lease holder: %v", err)
	}

	// A driver in a listed namespace is injected; the API server picks up
	// the patched caBundle asynchronously, hence the dry-run polling.
	pod := fixtures.LoadPod(t, "../examples/spark-pi-pod.yaml")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("team-a").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("driver pods are still refused: %v", err)
	}
	created, err := client.CoreV1().Pods("team-a").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d replicas serving the Secret's certificate, caBundle patched, %s after start; first driver injected after %s",
		replicas, serving.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	if problems := verify.Driver(created); len(problems) > 0 {
		t.Fatalf("not a proper driver:\n- %s", strings.Join(problems, "\n- "))
	}
	if created.Spec.ServiceAccountName != "spark-driver" {
		t.Errorf("driver service account %q, want the chart's spark-driver", created.Spec.ServiceAccountName)
	}
	// The chart's policy names the chart's image for the sidecar.
	sidecar := false
	for _, ic := range created.Spec.InitContainers {
		sidecar = sidecar || ic.Image == "ghcr.io/sparklet/sparklet:0.1.0"
	}
	if !sidecar {
		t.Errorf("no init container runs the chart's image: %+v", created.Spec.InitContainers)
	}

	// A namespace not in the list is left alone.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := client.CoreV1().Pods("team-c").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Annotations[vocab.AnnotationStatus]; ok {
		t.Error("a driver in a namespace outside namespaces.list was injected")
	}
	reapsKeptExecutors(ctx, t, c)
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		p, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	return ports
}

// runReplicas runs the Deployment's webhook containers as local processes
// on ports, with the Deployment's own arguments (listen address and policy
// file made local). With tlsDir empty (self-managed certificates) they get
// the Deployment's service account's token, so that the chart's RBAC is
// what they work with; otherwise they read the certificate files the
// Deployment mounts at /etc/sparklet/tls from tlsDir. It returns a channel
// per replica that is closed when that replica exits.
func runReplicas(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, full string, d *appsv1.Deployment, policyYAML string, ports []int, tlsDir string) []<-chan struct{} {
	t.Helper()
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var extra []string
	if tlsDir == "" {
		kubeconfig := serviceAccountKubeconfig(ctx, t, c, ns, full, filepath.Join(dir, "webhook.kubeconfig"))
		extra = []string{"--kubeconfig=" + kubeconfig, "--cert-extra-sans=127.0.0.1"}
	}
	var exited []<-chan struct{}
	for i, port := range ports {
		var args []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			switch {
			case strings.HasPrefix(a, "--listen="):
				a = fmt.Sprintf("--listen=127.0.0.1:%d", port)
			case strings.HasPrefix(a, "--policy="):
				a = "--policy=" + policyFile
			case tlsDir != "":
				a = strings.Replace(a, "=/etc/sparklet/tls/", "="+tlsDir+"/", 1)
			}
			args = append(args, a)
		}
		args = append(args, extra...)
		logFile := filepath.Join(dir, fmt.Sprintf("webhook-%d.log", i))
		cmd, done, err := cluster.Spawn(filepath.Join(binDir(t), "sparklet"), args, logFile, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cluster.Terminate(cmd.Process.Pid, done)
			if t.Failed() {
				t.Logf("webhook %d (%v) log:\n%s", i, args, cluster.Tail(logFile, 40))
			}
		})
		exited = append(exited, done)
	}
	return exited
}

// servedLeaf connects to a local replica, verifying it for 127.0.0.1
// against the caBundle, and returns its certificate.
func servedLeaf(port int, bundle []byte) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return nil, errors.New("caBundle holds no certificate")
	}
	dialer := &net.Dialer{Timeout: time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// serviceAccountKubeconfig writes a kubeconfig with a token of the
// ServiceAccount ns/name, so that a local process has its RBAC and no more.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name, path string) string {
	t.Helper()
	if err := writeServiceAccountKubeconfig(ctx, c, ns, name, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeServiceAccountKubeconfig(ctx context.Context, c *cluster.Cluster, ns, name, path string) error {
	tok, err := c.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig())
	if err != nil {
		return err
	}
	for _, a := range cfg.AuthInfos {
		*a = clientcmdapi.AuthInfo{Token: tok.Status.Token}
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// checkRBAC asks the API server's authorizer what the chart's accounts
// may do: the webhook only its own Secret, Lease and configuration; the
// sidecar (the driver ServiceAccount) what Spark's backend needs in its
// namespace and nothing cluster-wide or secret.
func checkRBAC(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	webhookSA := "system:serviceaccount:" + releaseNS + ":" + release + "-sparklet"
	driverSA := "system:serviceaccount:team-a:spark-driver"
	type check struct {
		user                          string
		verb, group, resource, ns, nm string
		allowed                       bool
	}
	var checks []check
	for _, v := range []string{"get", "update"} {
		checks = append(checks, check{webhookSA, v, "", "secrets", releaseNS, "sparklet-webhook-certs", true},
			check{webhookSA, v, "coordination.k8s.io", "leases", releaseNS, "sparklet-webhook-certs-writer", true})
	}
	for _, v := range []string{"get", "patch"} {
		checks = append(checks, check{webhookSA, v, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", release + "-sparklet", true},
			check{webhookSA, v, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "someone-elses", false})
	}
	checks = append(checks,
		check{webhookSA, "create", "", "secrets", releaseNS, "", true},
		check{webhookSA, "get", "", "secrets", releaseNS, "other", false},
		check{webhookSA, "list", "", "secrets", releaseNS, "", false},
		check{webhookSA, "delete", "", "secrets", releaseNS, "sparklet-webhook-certs", false},
		check{webhookSA, "get", "", "secrets", "team-a", "sparklet-webhook-certs", false},
		check{webhookSA, "create", "", "pods", "team-a", "", false},
		// The policy keeps failed executors: the webhook reaps them in the
		// listed namespaces (keep-failed.yaml).
		check{webhookSA, "list", "", "pods", "team-a", "", true},
		check{webhookSA, "watch", "", "pods", "team-b", "", true},
		check{webhookSA, "delete", "", "pods", "team-a", "", true},
		check{webhookSA, "get", "", "pods", "team-a", "", false},
		check{webhookSA, "patch", "", "pods", "team-a", "", false},
		check{webhookSA, "delete", "", "pods", "team-c", "", false},
		check{webhookSA, "list", "", "pods", "", "", false},
		check{webhookSA, "update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", release + "-sparklet", false},
	)
	for res, verbs := range map[string][]string{
		"pods":       {"get", "list", "watch", "create", "delete", "deletecollection", "patch"},
		"configmaps": {"get", "list", "watch", "create", "delete", "deletecollection"}, "persistentvolumeclaims": {"get", "list", "watch", "create", "delete", "deletecollection"},
		"services": {"list", "create", "patch", "delete", "deletecollection"}, "events": {"create", "patch"}, "pods/status": {"patch"},
		"pods/resize": {"patch"}, "resourcequotas": {"list"},
	} {
		for _, v := range verbs {
			checks = append(checks, check{driverSA, v, "", res, "team-a", "", true}, check{driverSA, v, "", res, "team-b", "", false})
		}
	}
	checks = append(checks,
		check{driverSA, "get", "", "secrets", "team-a", "", false},
		check{driverSA, "get", "", "services", "team-a", "", false},
		check{driverSA, "update", "", "services", "team-a", "", false},
		check{driverSA, "create", "networking.k8s.io", "ingresses", "team-a", "", false}, // no ui.ingress in these values
		check{driverSA, "update", "", "pods", "team-a", "", false},
		check{driverSA, "update", "", "pods/status", "team-a", "", false},
		check{driverSA, "create", "", "pods/exec", "team-a", "", false},
		check{driverSA, "list", "", "pods", "", "", false},
		check{"system:serviceaccount:team-a:default", "create", "", "pods", "team-a", "", false},
	)
	for _, ch := range checks {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: ch.user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + strings.Split(ch.user, ":")[2], "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: ch.verb, Group: ch.group, Resource: ch.resource, Namespace: ch.ns, Name: ch.nm}}}
		if strings.Contains(ch.resource, "/") {
			parts := strings.SplitN(ch.resource, "/", 2)
			sar.Spec.ResourceAttributes.Resource, sar.Spec.ResourceAttributes.Subresource = parts[0], parts[1]
		}
		got, err := c.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != ch.allowed {
			t.Errorf("%s %s %s/%s %q in %q: allowed %v, want %v", ch.user, ch.verb, ch.group, ch.resource, ch.nm, ch.ns, got.Status.Allowed, ch.allowed)
		}
	}
}

// checkRefused renders the chart with the --set values and extra helm
// flags, and wants helm to refuse them with a message containing want.
func checkRefused(t *testing.T, set []string, want string, flags ...string) {
	t.Helper()
	args := append([]string{"template", release, "sparklet", "--namespace", releaseNS}, flags...)
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm(t), args...).CombinedOutput()
	if err == nil {
		t.Errorf("--set %v rendered without error", set)
		return
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("--set %v: error does not name %s:\n%s", set, want, out)
	}
}
