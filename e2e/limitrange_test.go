package e2e

import (
	"bytes"
	"os"
	"os/exec"
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
// 50 times its request.
// `sparklet policy validate --server-dry-run` names the policy fields;
// with sidecar.resources and sidecar.confResources set within the ratio,
// the policy is valid there and the driver it injects is admitted.
func TestLimitRangeRatioAndInjectedContainers(t *testing.T) {
	ctx := ctxFor(t)
	optedIn := namespace(t, true)
	plain := optedIn + "-plain"
	if err := env.CreateNamespace(ctx, plain, false); err != nil {
		t.Fatal(err)
	}
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
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: testenv.DriverServiceAccount}}
	if _, err := env.Client.CoreV1().ServiceAccounts(plain).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const refused = "cpu max limit to request ratio per Container is 10"
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// What a user sees: the webhook's driver, with the built-in resources.
	_, err := env.Client.CoreV1().Pods(optedIn).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), dryRun)
	if err == nil || !strings.Contains(err.Error(), refused) {
		t.Fatalf("the injected driver under the LimitRange: err %v, want the API server's %q", err, refused)
	}
	t.Logf("the API server to the injected driver: %v", err)

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
	pod, err := os.ReadFile("../examples/spark-pi-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy string
		admit  bool
	}{{builtIn, false}, {tuned, true}} {
		out, stderr, code := sparklet(t, pod, "inject", "-f", "-", "-n", plain, "--policy", tc.policy, "--log-level=error")
		if code != 0 {
			t.Fatalf("inject with %s: exit %d\n%s", filepath.Base(tc.policy), code, stderr)
		}
		var injected corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(out), &injected); err != nil {
			t.Fatalf("inject with %s printed no pod: %v\n%s", filepath.Base(tc.policy), err, out)
		}
		_, err := env.Client.CoreV1().Pods(plain).Create(ctx, &injected, dryRun)
		switch {
		case tc.admit && err != nil:
			t.Errorf("the driver injected with %s: %v, want it admitted", filepath.Base(tc.policy), err)
		case !tc.admit && (err == nil || !strings.Contains(err.Error(), refused)):
			t.Errorf("the driver injected with %s: err %v, want the API server's %q", filepath.Base(tc.policy), err, refused)
		}
	}
}

// sparklet runs the CLI from SPARKLET_BIN_DIR against the local control
// plane with stdin, and returns its stdout, stderr and exit code.
func sparklet(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet"), append(args, "--kubeconfig", env.Cluster.Kubeconfig())...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
