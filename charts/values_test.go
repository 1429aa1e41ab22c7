package charts

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTemplateWithoutKubeVersion: the helm that make builds assumes the
// Kubernetes of its client-go, which the chart's kubeVersion accepts; a
// helm without that assumes 1.20 and refuses the chart.
func TestTemplateWithoutKubeVersion(t *testing.T) {
	out := run(t, helm(t), "template", release, "sparklet", "--namespace", releaseNS)
	if !strings.Contains(out, "kind: MutatingWebhookConfiguration") {
		t.Errorf("helm template rendered no webhook configuration:\n%s", out)
	}
	version := run(t, helm(t), "version", "--template", "{{.Version}}")
	if !strings.HasPrefix(version, "v3.") {
		t.Errorf("helm version %q: the build sets no version", version)
	}
}

// TestNameOverrides: fullnameOverride names every object, nameOverride the
// app label, and selectors still match what they select.
func TestNameOverrides(t *testing.T) {
	r := render(t, "overrides.yaml")
	const full = "platform-spark"
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+full, &d)
	var svc corev1.Service
	r.get(t, "Service/"+releaseNS+"/"+full, &svc)
	if got := d.Labels["app.kubernetes.io/name"]; got != "spark-webhook" {
		t.Errorf("app.kubernetes.io/name = %q, want the nameOverride", got)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Template.Labels) || !reflect.DeepEqual(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("selectors %v / %v do not match the pod labels %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	for _, key := range []string{
		"ConfigMap/" + releaseNS + "/" + full + "-policy",
		"ServiceAccount/" + releaseNS + "/" + full,
		"ClusterRole//" + full + "-driver",
		"RoleBinding/team-a/" + full + "-driver",
		"MutatingWebhookConfiguration//" + full,
		"Certificate/" + releaseNS + "/" + full + "-serving",
	} {
		if _, ok := r.docs[key]; !ok {
			t.Errorf("%s not rendered", key)
		}
	}
	for key := range r.docs {
		if strings.Contains(key, release+"-sparklet") {
			t.Errorf("%s ignores fullnameOverride", key)
		}
	}
	var serving certificate
	r.unstructured(t, "Certificate/"+releaseNS+"/"+full+"-serving", &serving)
	if serving.Spec.DNSNames[2] != full+"."+releaseNS+".svc" {
		t.Errorf("serving certificate names %v, not the Service", serving.Spec.DNSNames)
	}
}

// TestDriverServiceAccountAnnotations: workload-identity annotations land
// on every driver ServiceAccount the chart makes, and nowhere else.
func TestDriverServiceAccountAnnotations(t *testing.T) {
	r := render(t, "overrides.yaml")
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount/team-a/spark-driver", &sa)
	want := map[string]string{"iam.gke.io/gcp-service-account": "spark@project.iam.gserviceaccount.com"}
	if !reflect.DeepEqual(sa.Annotations, want) {
		t.Errorf("driver ServiceAccount annotations = %v, want %v", sa.Annotations, want)
	}
	var webhookSA corev1.ServiceAccount
	r.get(t, "ServiceAccount/"+releaseNS+"/platform-spark", &webhookSA)
	if len(webhookSA.Annotations) != 0 {
		t.Errorf("the webhook's ServiceAccount got %v", webhookSA.Annotations)
	}
	var plain corev1.ServiceAccount
	render(t, "namespace-list.yaml").get(t, "ServiceAccount/team-a/spark-driver", &plain)
	if plain.Annotations != nil {
		t.Errorf("annotations without serviceAccountAnnotations: %v", plain.Annotations)
	}
}

// TestNewValuesAreChecked: the schema types the new values.
func TestNewValuesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"fullnameOverride=Not_A_Name"}, "/fullnameOverride"},
		{[]string{"nameOverride=-x"}, "/nameOverride"},
		{[]string{"driver.serviceAccountAnnotations.a=1"}, "/driver/serviceAccountAnnotations/a"},
		{[]string{"podMonitor.enabled=yes"}, "/podMonitor/enabled"},
		{[]string{"podMonitor.scheme=http"}, "scheme"},
		{[]string{"tests.image="}, "/tests/image"},
		{[]string{"tests.namespace=Team_A"}, "/tests/namespace"},
	} {
		checkRefused(t, tc.set, tc.want) // no --kube-version: helm knows its own
	}
	// global is a parent chart's, and accepted.
	run(t, helm(t), "template", release, "sparklet", "--namespace", releaseNS, "--set", "global.imageRegistry=r.example.com,global.foo.bar=1")
}

// TestPodMonitor: off by default; on, it selects driver pods in the
// opted-in namespaces and scrapes the sidecar's named metrics port and
// Spark's PrometheusServlet paths on the named UI port.
func TestPodMonitor(t *testing.T) {
	key := "PodMonitor/" + releaseNS + "/" + release + "-sparklet-drivers"
	if _, ok := render(t).docs[key]; ok {
		t.Error("PodMonitor rendered by default")
	}
	type podMonitor struct {
		Spec struct {
			Selector          metav1.LabelSelector `json:"selector"`
			NamespaceSelector struct {
				Any        bool     `json:"any"`
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct{ Port, Path, Interval string } `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	for _, tc := range []struct {
		values []string
		any    bool
		names  []string
	}{
		{[]string{"pod-monitor.yaml"}, true, nil},
		{[]string{"pod-monitor.yaml", "namespace-list.yaml"}, false, []string{"team-a", "team-b"}},
	} {
		var pm podMonitor
		render(t, tc.values...).unstructured(t, key, &pm)
		if !reflect.DeepEqual(pm.Spec.Selector.MatchLabels, map[string]string{"spark-role": "driver"}) {
			t.Errorf("%v: selector %v", tc.values, pm.Spec.Selector)
		}
		if pm.Spec.NamespaceSelector.Any != tc.any || !reflect.DeepEqual(pm.Spec.NamespaceSelector.MatchNames, tc.names) {
			t.Errorf("%v: namespaceSelector %+v", tc.values, pm.Spec.NamespaceSelector)
		}
		got := map[string]string{}
		for _, e := range pm.Spec.Endpoints {
			got[e.Path] = e.Port
			if e.Interval != "20s" {
				t.Errorf("%v: %s interval %q", tc.values, e.Path, e.Interval)
			}
		}
		want := map[string]string{"/metrics": "metrics", "/metrics/prometheus/": "spark-ui", "/metrics/executors/prometheus/": "spark-ui"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: endpoints %v, want %v", tc.values, got, want)
		}
	}
}

// TestHelmTestHook: the test Pod is a helm test hook that dry-runs a
// driver in the first listed namespace, as an account that may only
// create pods there; without a namespace to test in there is no test.
func TestHelmTestHook(t *testing.T) {
	full := release + "-sparklet"
	if _, ok := render(t).docs["Pod/"+releaseNS+"/"+full+"-test"]; ok {
		t.Error("a test Pod without a namespace to test in")
	}
	for _, tc := range []struct {
		set []string
		ns  string
	}{
		{nil, "team-a"},
		{[]string{"tests.namespace=team-b"}, "team-b"},
	} {
		args := []string{"template", release, "sparklet", "--namespace", releaseNS, "-f", "testdata/namespace-list.yaml"}
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		r := parse(t, run(t, helm(t), args...))
		var pod corev1.Pod
		r.get(t, "Pod/"+releaseNS+"/"+full+"-test", &pod)
		if pod.Annotations["helm.sh/hook"] != "test" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.ServiceAccountName != full+"-test" {
			t.Errorf("%v: test pod %+v", tc.set, pod.ObjectMeta)
		}
		a := strings.Join(pod.Spec.Containers[0].Args, " ")
		for _, want := range []string{"run ", "--namespace=" + tc.ns, "--labels=spark-role=driver", "--dry-run=server",
			`--output=jsonpath={.metadata.annotations.sparklet\.io/status}`, "--allow-missing-template-keys=false"} {
			if !strings.Contains(a, want) {
				t.Errorf("%v: test args %q lack %s", tc.set, a, want)
			}
		}
		var role rbacv1.Role
		r.get(t, "Role/"+tc.ns+"/"+full+"-test", &role)
		if len(role.Rules) != 1 || !reflect.DeepEqual(role.Rules[0].Verbs, []string{"create"}) || !reflect.DeepEqual(role.Rules[0].Resources, []string{"pods"}) {
			t.Errorf("%v: test Role %+v, want create pods only", tc.set, role.Rules)
		}
		var rb rbacv1.RoleBinding
		r.get(t, "RoleBinding/"+tc.ns+"/"+full+"-test", &rb)
		if rb.Subjects[0].Name != pod.Spec.ServiceAccountName || rb.Subjects[0].Namespace != releaseNS {
			t.Errorf("%v: test RoleBinding %+v", tc.set, rb.Subjects)
		}
	}
	r := parse(t, run(t, helm(t), "template", release, "sparklet", "--namespace", releaseNS, "-f", "testdata/namespace-list.yaml", "--set", "tests.enabled=false"))
	for key := range r.docs {
		if strings.HasSuffix(key, "-test") {
			t.Errorf("tests.enabled=false still renders %s", key)
		}
	}
}

// TestIngressRBACFollowsThePolicy: the driver role may create Ingresses
// only when the policy has a ui.ingress template, cluster-wide or in a
// namespace's section.
func TestIngressRBACFollowsThePolicy(t *testing.T) {
	canCreate := func(r rendered) bool {
		var cr rbacv1.ClusterRole
		r.get(t, "ClusterRole//"+release+"-sparklet-driver", &cr)
		for _, rule := range cr.Rules {
			if reflect.DeepEqual(rule.APIGroups, []string{"networking.k8s.io"}) && reflect.DeepEqual(rule.Resources, []string{"ingresses"}) {
				return reflect.DeepEqual(rule.Verbs, []string{"create"})
			}
		}
		return false
	}
	if canCreate(render(t)) {
		t.Error("ingress create granted without ui.ingress")
	}
	if !canCreate(render(t, "ui-ingress.yaml")) {
		t.Error("no ingress create with the cluster's ui.ingress")
	}
	ns := parse(t, run(t, helm(t), "template", release, "sparklet", "--namespace", releaseNS,
		"--set", "policy.namespaces.team-a.ui.ingress.host=ui.example.com"))
	if !canCreate(ns) {
		t.Error("no ingress create with a namespace's ui.ingress")
	}
}
