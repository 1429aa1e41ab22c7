package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	testenv "github.com/sparklet/sparklet/test/env"
)

// tunedSidecars are policy settings that keep both of sparklet's
// containers within a CPU limit-to-request ratio of 10.
const tunedSidecars = `sidecar:
  resources: {requests: {cpu: 50m, memory: 48Mi}, limits: {cpu: 500m, memory: 256Mi}}
  confResources: {requests: {cpu: 50m, memory: 16Mi}, limits: {cpu: 500m, memory: 64Mi}}
`

// A LimitRange as project templates set them: a default CPU limit and a
// CPU limit at most ten times the request. With the built-in resources
// the API server refuses every driver sparklet injects, in a message that
// names neither container: the sidecar has no CPU limit (the LimitRange's
// default comes before the webhook adds it) and the conf container's is
// 50 times its request. `sparklet check` and `sparklet policy validate
// --server-dry-run` name the policy fields; with sidecar.resources and
// sidecar.confResources set within the ratio, the policy is valid there
// and the driver it injects is admitted.
func TestLimitRangeRatioAndInjectedContainers(t *testing.T) {
	ctx := ctxFor(t)
	optedIn := namespace(t, true)
	plain := plainNamespace(t, optedIn+"-plain")
	for _, ns := range []string{optedIn, plain} {
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu-ratio"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:                 corev1.LimitTypeContainer,
			Default:              corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			DefaultRequest:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
		}}}}
		if _, err := env.Client.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const refused = "cpu max limit to request ratio per Container is 10"
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// What a user sees: the webhook's driver, with the built-in resources
	// (the PySpark example fetches its dependencies in sparklet's init
	// container, which has the sidecar's).
	examples := []string{"spark-pi-pod.yaml", "pyspark-pod.yaml"}
	for _, file := range examples {
		_, err := env.Client.CoreV1().Pods(optedIn).Create(ctx, examplePod(t, file), dryRun)
		if err == nil || !strings.Contains(err.Error(), refused) {
			t.Fatalf("the injected %s under the LimitRange: err %v, want the API server's %q", file, err, refused)
		}
		t.Logf("the API server to the injected %s: %v", file, err)
	}

	// sparklet check names the containers, the policy fields and the
	// LimitRange.
	requireLines(t, sparkletCheck(t, "-n", optedIn),
		"sparklet-sidecar (the policy's sidecar.resources): LimitRange cpu-ratio requires a cpu limit",
		"sparklet-spark-conf (the policy's sidecar.confResources): cpu limit 500m is 50 times its request 10m, above LimitRange cpu-ratio's maxLimitRequestRatio 10; the API server refuses every such driver")

	example, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	builtIn, tuned := filepath.Join(dir, "built-in.yaml"), filepath.Join(dir, "tuned.yaml")
	if err := os.WriteFile(builtIn, example, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tuned, append(example, tunedSidecars...), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _, code := sparklet(t, nil, "policy", "validate", "--server-dry-run", "-n", optedIn, builtIn)
	if code != 1 {
		t.Errorf("validate the built-in resources under the LimitRange: exit %d, want 1\n%s", code, out)
	}
	requireLines(t, out,
		"  - sidecar.confResources: the API server refuses it (dry run in namespace "+optedIn+"): ", "cpu max limit to request ratio per Container is 10, but provided ratio is 50",
		"  - sidecar.resources: in namespace "+optedIn+", LimitRange cpu-ratio requires a cpu limit (its max or maxLimitRequestRatio), and its default limit never reaches a container that sparklet adds: set limits.cpu")
	if out, _, code := sparklet(t, nil, "policy", "validate", "--server-dry-run", "-n", optedIn, tuned); code != 0 {
		t.Errorf("validate the tuned resources under the LimitRange: exit %d, want 0\n%s", code, out)
	}

	// The driver each policy injects, where the webhook does not inject
	// again. Created whole, it gets the LimitRange's defaults for what it
	// leaves out, which the webhook's containers do not (validate above);
	// what the policy sets is judged as the webhook's would be.
	for _, file := range examples {
		pod, err := os.ReadFile("../examples/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			policy string
			admit  bool
		}{{builtIn, false}, {tuned, true}} {
			_, err := env.Client.CoreV1().Pods(plain).Create(ctx, injectedBy(t, pod, plain, tc.policy), dryRun)
			switch {
			case tc.admit && err != nil:
				t.Errorf("%s injected with %s: %v, want it admitted", file, filepath.Base(tc.policy), err)
			case !tc.admit && (err == nil || !strings.Contains(err.Error(), refused)):
				t.Errorf("%s injected with %s: err %v, want the API server's %q", file, filepath.Base(tc.policy), err, refused)
			}
		}
	}
}

// A ResourceQuota makes the API server ask every container, init
// containers too, for the requests and limits it counts. The built-in
// resources have every request, so a quota on requests admits the driver
// (sparklet's init container, which fetches dependencies, had none). On
// limits.cpu the sidecar and the init container have no CPU limit, and
// every driver is refused even when its own Spark container has one; with
// sidecar.resources giving one, the driver is admitted.
func TestResourceQuotaAndInjectedContainers(t *testing.T) {
	ctx := ctxFor(t)
	optedIn := namespace(t, true)
	plain, requests := plainNamespace(t, optedIn+"-plain"), optedIn+"-requests"
	if err := env.CreateNamespace(ctx, requests, true); err != nil {
		t.Fatal(err)
	}
	onRequests := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "requests"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("20"), corev1.ResourceRequestsMemory: resource.MustParse("20Gi")}}}
	if _, err := env.Client.CoreV1().ResourceQuotas(requests).Create(ctx, onRequests, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{optedIn, plain} {
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceLimitsCPU: resource.MustParse("20"), corev1.ResourceRequestsCPU: resource.MustParse("20")}}}
		if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The user's own container has what the quotas ask for.
	withLimits := func(pod *corev1.Pod) *corev1.Pod {
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
		return pod
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := env.Client.CoreV1().Pods(requests).Create(ctx, withLimits(examplePod(t, "pyspark-pod.yaml")), dryRun); err != nil {
		t.Errorf("the injected driver under a quota on requests: %v, want it admitted", err)
	}
	_, err := env.Client.CoreV1().Pods(optedIn).Create(ctx, withLimits(examplePod(t, "pyspark-pod.yaml")), dryRun)
	if err == nil || !strings.Contains(err.Error(), "must specify limits.cpu") {
		t.Fatalf("the injected driver under the quota: err %v, want the API server asking for limits.cpu", err)
	}
	t.Logf("the API server to the injected driver: %v", err)
	requireLines(t, sparkletCheck(t, "-n", optedIn),
		"sparklet-sidecar (the policy's sidecar.resources): ResourceQuota cpu counts limits.cpu, which every container then needs: set limits.cpu",
		"sparklet-init, with sparklet.io/fetch (the policy's sidecar.resources): ResourceQuota cpu counts limits.cpu")
	requireLines(t, sparkletCheck(t, "-n", requests), "LimitRanges and ResourceQuotas: sparklet's containers meet them")

	example, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tuned := filepath.Join(t.TempDir(), "tuned.yaml")
	if err := os.WriteFile(tuned, append(example, tunedSidecars...), 0o644); err != nil {
		t.Fatal(err)
	}
	pod, err := yaml.Marshal(withLimits(examplePod(t, "pyspark-pod.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Pods(plain).Create(ctx, injectedBy(t, pod, plain, tuned), dryRun); err != nil {
		t.Errorf("the driver injected with sidecar.resources and confResources under the quota: %v, want it admitted", err)
	}
}

// plainNamespace creates a namespace that has not opted in, with the
// example policy's driver ServiceAccount, for drivers that sparklet inject
// injected.
func plainNamespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.CreateNamespace(ctxFor(t), name, false); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: testenv.DriverServiceAccount}}
	if _, err := env.Client.CoreV1().ServiceAccounts(name).Create(ctxFor(t), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// injectedBy is the pod that sparklet inject makes of pod (YAML) for
// namespace ns with the policy file.
func injectedBy(t *testing.T, pod []byte, ns, policyFile string) *corev1.Pod {
	t.Helper()
	out, stderr, code := sparklet(t, pod, "inject", "-f", "-", "-n", ns, "--policy", policyFile, "--log-level=error")
	if code != 0 {
		t.Fatalf("inject with %s: exit %d\n%s", filepath.Base(policyFile), code, stderr)
	}
	var injected corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(out), &injected); err != nil {
		t.Fatalf("inject with %s printed no pod: %v\n%s", filepath.Base(policyFile), err, out)
	}
	return &injected
}
