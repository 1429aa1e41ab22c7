package policy

import (
	"strings"
	"testing"
)

func TestParseErrorsNameTheField(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown top-level", "spakr: {}", "spakr: unknown field"},
		{"unknown nested", "driver:\n  defaults:\n    nodeSelektor: {a: b}", "driver.defaults.nodeSelektor: unknown field"},
		{"unknown in list", "credentials:\n- name: s3\n  secretName: s\n  mountPath: /x\n  envv: []", "credentials[0].envv: unknown field"},
		{"unknown in corev1 type", "driver:\n  defaults:\n    env:\n    - {name: A, vaule: b}", "driver.defaults.env[0].vaule: unknown field"},
		{"unknown in namespace", "namespaces:\n  team-a:\n    limits: {maxExecutor: 3}", "namespaces.team-a.limits.maxExecutor: unknown field"},
		{"wrong type", "limits: {maxExecutors: many}", "maxExecutors"},
		{"reserved key", "spark:\n  enforced:\n    spark.master: local", "spark.enforced.spark.master: reserved"},
		{"not a spark key", "spark:\n  defaults:\n    executor.cores: '2'", `spark.defaults.executor.cores: Spark properties start with "spark."`},
		{"credential without secret", "credentials:\n- name: s3\n  env: [{name: A, key: b}]", "credentials[0].secretName: required"},
		{"credential target", "credentials:\n- {name: s3, secretName: s, mountPath: /s, to: [jvm]}", `credentials[0].to[0]: must be "driver" or "executor"`},
		{"bad pattern", "allowedImages: ['apache/[spark']", "allowedImages[0]"},
		{"spark port", "sidecar: {port: 4040}", "sidecar.port: 4040 is one of Spark's own ports"},
		{"empty sidecar command", "sidecar: {command: ['']}", "sidecar.command: must name the sidecar's executable in its image"},
		{"bad quantity", "limits:\n  executor: {maxMemory: lots}", "maxMemory"},
		{"negative limit", "limits: {maxExecutors: -1}", "limits.maxExecutors: must not be negative"},
		{"zero PVC size", "limits:\n  executor: {maxPVCSize: 0}", "limits.executor.maxPVCSize: must be positive"},
		{"driver PVC size", "limits:\n  driver: {maxPVCSize: 10Gi}", "limits.driver.maxPVCSize: PVC growth is for executors' PVCs only"},
		{"sidecar request over its limit", "sidecar:\n  resources: {requests: {memory: 300Mi}, limits: {memory: 256Mi}}",
			"sidecar.resources.requests.memory: 300Mi is above the memory limit 256Mi"},
		{"conf container request over its limit", "sidecar:\n  confResources: {requests: {cpu: 600m}, limits: {cpu: 500m}}",
			"sidecar.confResources.requests.cpu: 600m is above the cpu limit 500m"},
		{"negative deadline", "sidecar: {executorScheduleDeadlineSeconds: -1}", "sidecar.executorScheduleDeadlineSeconds: must not be negative"},
		{"bad namespace", "namespaces:\n  Team_A: {}", "namespaces.Team_A"},
		{"not a mapping", "- a\n- b", "must be a mapping"},
		{"executor on the driver account", "driver:\n  defaults: {serviceAccountName: spark-driver}\nspark:\n  enforced:\n    spark.kubernetes.authenticate.executor.serviceAccountName: spark-driver",
			`spark.enforced.spark.kubernetes.authenticate.executor.serviceAccountName: "spark-driver" is a driver ServiceAccount of this policy`},
		{"driver key lent to executors", "namespaces:\n  etl:\n    driver:\n      enforced: {serviceAccountName: etl-driver}\n    spark:\n      defaults:\n        spark.kubernetes.authenticate.driver.serviceAccountName: etl-driver",
			`namespaces.etl.spark.defaults.spark.kubernetes.authenticate.driver.serviceAccountName: "etl-driver" is a driver ServiceAccount`},
		{"hostPath over the kubelet's pods", "executor:\n  defaults:\n    allowHostPath: true\n    volumes:\n    - {name: k, hostPath: {path: /var/lib/kubelet}}",
			`executor.defaults.volumes[0].hostPath.path: "/var/lib/kubelet" holds the kubelet's pod directory /var/lib/kubelet/pods`},
		{"empty audience", "apiServerAudiences: ['https://kubernetes.default.svc', '']", "apiServerAudiences[1]: empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "dev")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCredentialAudience: a projection without an audience is always a
// credential; named ones are when the policy (or, unset, the default)
// lists them; the policy's list replaces the default.
func TestCredentialAudience(t *testing.T) {
	def := Default("dev").For("x")
	listed, err := Parse([]byte("apiServerAudiences: [https://oidc.example.com]"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	own := listed.For("x")
	for _, tc := range []struct {
		e        *Effective
		audience string
		want     bool
	}{
		{def, "", true},
		{def, "https://kubernetes.default.svc", true},
		{def, "https://kubernetes.default.svc.cluster.local", true},
		{def, "istio-ca", false},
		{def, "sts.amazonaws.com", false},
		{def, "vault", false},
		{own, "", true},
		{own, "https://oidc.example.com", true},
		{own, "https://kubernetes.default.svc", false},
		{own, "istio-ca", false},
	} {
		if got := tc.e.CredentialAudience(tc.audience); got != tc.want {
			t.Errorf("audiences %v: CredentialAudience(%q) = %v, want %v", tc.e.APIServerAudiences, tc.audience, got, tc.want)
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	e := Default("dev").For("x")
	if e.Sidecar.Port != DefaultSidecarPort || e.Sidecar.Image == "" || e.LocalDirs.Count != 1 {
		t.Errorf("defaults not filled: %+v", e.Sidecar)
	}
	if err := e.CheckImage("anything:1"); err != nil {
		t.Errorf("no allow-list must allow every image: %v", err)
	}
}

const layered = `
spark:
  defaults: {spark.a: cluster, spark.b: cluster}
  enforced: {spark.e: cluster}
driver:
  defaults:
    env: [{name: A, value: cluster}, {name: B, value: cluster}]
    priorityClassName: low
  enforced:
    labels: {tier: cluster}
limits:
  maxExecutors: 50
  executor: {maxMemory: 32Gi, maxPVCSize: 100Gi}
allowedImages: ["apache/*"]
credentials: [{name: c1, secretName: s1, mountPath: /c1}]
namespaces:
  team-a:
    spark:
      defaults: {spark.b: team}
      enforced: {spark.e: team, spark.f: team}
    driver:
      defaults:
        env: [{name: B, value: team}]
      enforced:
        labels: {tier: team, owner: team}
    limits:
      maxExecutors: 100
      executor: {maxMemory: 8Gi, maxPVCSize: 200Gi}
    allowedImages: ["apache/spark:*"]
    credentials: [{name: c2, secretName: s2, env: [{name: K, key: k}], to: [executor]}]
`

func TestNamespaceLayering(t *testing.T) {
	p, err := Parse([]byte(layered), "dev")
	if err != nil {
		t.Fatal(err)
	}
	e := p.For("team-a")
	checks := []struct{ what, got, want string }{
		{"spark default from cluster", e.Spark.Defaults["spark.a"], "cluster"},
		{"namespace overrides cluster default", e.Spark.Defaults["spark.b"], "team"},
		{"cluster enforced beats namespace enforced", e.Spark.Enforced["spark.e"], "cluster"},
		{"namespace enforced kept", e.Spark.Enforced["spark.f"], "team"},
		{"cluster enforced label wins", e.Driver.Enforced.Labels["tier"], "cluster"},
		{"namespace enforced label kept", e.Driver.Enforced.Labels["owner"], "team"},
		{"scalar default kept", e.Driver.Defaults.PriorityClassName, "low"},
		{"env merged by name", e.Driver.Defaults.Env[1].Value, "team"},
		{"stricter memory", e.Limits.Executor.MaxMemory.String(), "8Gi"},
		{"stricter PVC size", e.Limits.Executor.MaxPVCSize.String(), "100Gi"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	if e.Limits.MaxExecutors != 50 {
		t.Errorf("a namespace may not raise maxExecutors: got %d", e.Limits.MaxExecutors)
	}
	if err := e.CheckImage("apache/hadoop:3"); err == nil {
		t.Error("the namespace list must narrow the cluster list")
	}
	if err := e.CheckImage("apache/spark:4.0.0"); err != nil {
		t.Error(err)
	}
	if got := len(e.CredentialsFor("driver")); got != 1 {
		t.Errorf("driver credentials = %d, want 1", got)
	}
	if got := len(e.CredentialsFor("executor")); got != 2 {
		t.Errorf("executor credentials = %d, want 2", got)
	}
	other := p.For("elsewhere")
	if other.Spark.Defaults["spark.b"] != "cluster" || other.Limits.Executor.MaxMemory.String() != "32Gi" {
		t.Errorf("another namespace must see cluster values: %+v", other.Spark)
	}
}

func TestPolicyRefusesControllerAllocators(t *testing.T) {
	_, err := Parse([]byte("spark:\n  defaults: {spark.kubernetes.allocation.pods.allocator: statefulset}\n"), "dev")
	if err == nil || !strings.Contains(err.Error(), "spark.defaults.spark.kubernetes.allocation.pods.allocator") {
		t.Errorf("err = %v, want one naming the key's path", err)
	}
	if _, err := Parse([]byte("spark:\n  enforced: {spark.kubernetes.allocation.pods.allocator: direct}\n"), "dev"); err != nil {
		t.Errorf("direct refused: %v", err)
	}
}

func TestUIIngressValidation(t *testing.T) {
	for text, want := range map[string]string{
		"ui: {ingress: {ingressClassName: nginx}}\n":                    "ui.ingress.host: is required",
		"ui: {ingress: {host: \"{{name}}_ui.example.com\"}}\n":          "ui.ingress.host: \"{{name}}_ui.example.com\" does not give a DNS name",
		"namespaces: {a: {ui: {ingress: {host: \"Bad Host\"}}}}\n":      "namespaces.a.ui.ingress.host",
		"ui: {ingress: {host: x.example.com, tlsSecretName: No_Way}}\n": "ui.ingress.tlsSecretName",
	} {
		if _, err := Parse([]byte(text), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
	}
	p, err := Parse([]byte("ui: {service: true, ingress: {host: \"{{name}}.spark.example.com\"}}\nnamespaces: {b: {ui: {ingress: {host: \"{{app}}.b.example.com\"}}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.For("a").UIIngress.UIHost("pi", "a", "spark-1"); got != "pi.spark.example.com" {
		t.Errorf("cluster template: %q", got)
	}
	if got := p.For("b").UIIngress.UIHost("pi", "b", "spark-1"); got != "spark-1.b.example.com" {
		t.Errorf("namespace template: %q", got)
	}
}
