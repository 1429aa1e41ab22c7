package charts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sparklet/sparklet/policy"
)

// tokenPolicy renders the chart and returns its driver-token policy and
// binding, and the Secret policy; ok is false when none is rendered.
func tokenPolicy(t *testing.T, values ...string) (pods, secrets admissionv1.ValidatingAdmissionPolicy, ok bool) {
	t.Helper()
	r := render(t, values...)
	name := release + "-sparklet-driver-token"
	if _, ok := r.docs["ValidatingAdmissionPolicy//"+name]; !ok {
		for k := range r.docs {
			if strings.HasPrefix(k, "ValidatingAdmissionPolicy") {
				t.Errorf("%v: %s rendered without the pod policy", values, k)
			}
		}
		return pods, secrets, false
	}
	r.get(t, "ValidatingAdmissionPolicy//"+name, &pods)
	r.get(t, "ValidatingAdmissionPolicy//"+name+"-secret", &secrets)
	for _, n := range []string{name, name + "-secret"} {
		var b admissionv1.ValidatingAdmissionPolicyBinding
		r.get(t, "ValidatingAdmissionPolicyBinding//"+n, &b)
		if b.Spec.PolicyName != n || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionv1.Deny {
			t.Errorf("%v: binding %s = %+v, want policy %s with Deny", values, n, b.Spec, n)
		}
	}
	return pods, secrets, true
}

func expressions(p admissionv1.ValidatingAdmissionPolicy) string {
	var b strings.Builder
	for _, c := range p.Spec.MatchConditions {
		b.WriteString(c.Expression + "\n")
	}
	for _, v := range p.Spec.Variables {
		b.WriteString(v.Expression + "\n")
	}
	for _, v := range p.Spec.Validations {
		b.WriteString(v.Expression + "\n" + v.Message + "\n" + v.MessageExpression + "\n")
	}
	return b.String()
}

func TestDriverTokenPolicy(t *testing.T) {
	for _, f := range []string{"token-containers.yaml", "no-token-policy.yaml", "api-audiences.yaml"} {
		run(t, helm(t), "lint", "sparklet", "--strict", "--kube-version", kubeVersion, "-f", filepath.Join("testdata", f))
	}
	for _, tc := range []struct {
		values      []string
		want, avoid []string
	}{
		{nil, []string{`in ["spark-driver"]`, `!(c.name in [])`, `c.image == "ghcr.io/sparklet/sparklet:0.1.0"`,
			`namespaceObject.metadata.?labels.orValue({})[?'sparklet.io/inject'].orValue('') == 'enabled'`,
			`s.serviceAccountToken.?audience.orValue('') in ["","https://kubernetes.default.svc","https://kubernetes.default.svc.cluster.local"]`,
			`!object.spec.?hostPID.orValue(false)`, `v.hostPath.path.startsWith('/var/lib/kubelet/pods/')`},
			[]string{"tokenContainers ("}},
		{[]string{"api-audiences.yaml"}, []string{`in ["spark-driver"]`,
			`s.serviceAccountToken.?audience.orValue('') in ["","https://oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLE"]`},
			[]string{"https://kubernetes.default.svc"}},
		{[]string{"custom-policy.yaml"}, []string{`in ["custom-driver","spark-driver"]`, `c.image == "registry.example.com/sparklet:1.2.3"`}, nil},
		{[]string{"namespace-list.yaml"}, []string{`in ["spark-driver"]`}, []string{"namespaceObject"}},
		{[]string{"token-containers.yaml"}, []string{`in ["etl-driver","spark-driver"]`, `!(c.name in ["init","wait"])`,
			"policy tokenContainers (init, wait)"}, nil},
	} {
		pods, secrets, ok := tokenPolicy(t, tc.values...)
		if !ok {
			t.Errorf("%v: no driver-token policy rendered", tc.values)
			continue
		}
		got := expressions(pods)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: the pod policy lacks %q:\n%s", tc.values, w, got)
			}
		}
		for _, a := range tc.avoid {
			if strings.Contains(got, a) {
				t.Errorf("%v: the pod policy has %q:\n%s", tc.values, a, got)
			}
		}
		if p := pods.Spec.FailurePolicy; p == nil || *p != admissionv1.Fail {
			t.Errorf("%v: pod policy failurePolicy = %v, want Fail", tc.values, p)
		}
		if !strings.Contains(expressions(secrets), strings.SplitN(tc.want[0], " ", 2)[1]) {
			t.Errorf("%v: the Secret policy does not name the same accounts:\n%s", tc.values, expressions(secrets))
		}
	}
	// The chart's default audiences are the webhook's.
	audiences, err := json.Marshal(append([]string{""}, policy.DefaultAPIServerAudiences...))
	if err != nil {
		t.Fatal(err)
	}
	if pods, _, _ := tokenPolicy(t); !strings.Contains(expressions(pods), "in "+string(audiences)) {
		t.Errorf("the pod policy's default audiences are not %s:\n%s", audiences, expressions(pods))
	}
	if _, _, ok := tokenPolicy(t, "no-token-policy.yaml"); ok {
		t.Error("driver.tokenPolicy.enabled=false still renders the policy")
	}
}

// TestChartNeedsKubernetes130 renders for a 1.29 cluster, which has no
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1 is 1.30's):
// the chart's kubeVersion refuses it, with the token policy or without,
// so no install runs without the policy that keeps the driver
// ServiceAccounts' tokens from pods sparklet skipped.
func TestChartNeedsKubernetes130(t *testing.T) {
	for _, values := range [][]string{nil, {"-f", filepath.Join("testdata", "no-token-policy.yaml")}} {
		args := append([]string{"template", release, "sparklet", "--namespace", releaseNS, "--kube-version", "1.29.4"}, values...)
		cmd := exec.Command(helm(t), args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "chart requires kubeVersion: >=1.30.0-0") {
			t.Errorf("helm template %v for 1.29: err %v, output:\n%s", values, err, out)
		}
	}
	run(t, helm(t), "template", release, "sparklet", "--namespace", releaseNS, "--kube-version", "1.30.0")
}
