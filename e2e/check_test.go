package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/vocab"
)

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

// sparkletCheck runs `sparklet check` against the local control plane with
// the webhook's policy file.
func sparkletCheck(t *testing.T, args ...string) string {
	t.Helper()
	policy, _ := filepath.Abs("../examples/policy.yaml")
	out, errOut, code := sparklet(t, nil, append([]string{"check", "--policy", policy}, args...)...)
	if code != 0 {
		t.Fatalf("sparklet check %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

func requireLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("sparklet check output lacks %q:\n%s", w, out)
		}
	}
}

func TestCheckNamespaces(t *testing.T) {
	optedIn, notOptedIn := namespace(t, true), namespace(t, false)+"-no"
	if err := env.CreateNamespace(ctxFor(t), notOptedIn, false); err != nil {
		t.Fatal(err)
	}
	requireLines(t, sparkletCheck(t, "-n", optedIn),
		"namespace/"+optedIn+": pods labelled spark-role=driver will be injected\n",
		"webhook sparklet (pods.sparklet.io): namespace matches its namespaceSelector (kubernetes.io/metadata.name notin (kube-system,sparklet-system),sparklet.io/inject=enabled)",
		"policy: "+filepath.Join(mustAbs(t, "../examples"), "policy.yaml")+"; cluster rules only (no namespaces."+optedIn+" section)",
		"driver ServiceAccount spark-driver: present")
	requireLines(t, sparkletCheck(t, "namespace/"+notOptedIn),
		"namespace/"+notOptedIn+": pods will NOT be injected\n",
		"webhook sparklet (pods.sparklet.io): namespace "+notOptedIn+" does not match its namespaceSelector: wants sparklet.io/inject=enabled, has no sparklet.io/inject label",
		"to opt in: kubectl label namespace "+notOptedIn+" sparklet.io/inject=enabled",
		"driver ServiceAccount spark-driver: missing in "+notOptedIn)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestCheckPods(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	pods := env.Client.CoreV1().Pods(ns)

	plain := examplePod(t, "spark-pi-pod.yaml")
	plain.Name, plain.Labels = "plain", map[string]string{"app": "web"}
	if _, err := pods.Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireLines(t, sparkletCheck(t, "plain", "-n", ns),
		"pod/plain: not injected\n",
		"webhook sparklet (pods.sparklet.io): the pod does not match its objectSelector: wants spark-role=driver, has no spark-role label",
		"sparklet skips it: not labelled spark-role=driver")

	driver, err := pods.Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appID := driver.Labels[vocab.LabelAppID]
	// Executors as the sidecar labels them: two that kwok runs, one that
	// no node takes.
	for i, selector := range []map[string]string{nil, nil, {"no-such-node": "true"}} {
		exec := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: driver.Name + "-exec-" + string(rune('1'+i)), Labels: map[string]string{vocab.LabelAppID: appID, vocab.LabelRole: "executor"}},
			Spec:       corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "apache/spark:3.5.4"}}},
		}
		if _, err := pods.Create(ctx, exec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = env.Client.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: driver.Name + "."},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: driver.Name, UID: driver.UID, APIVersion: "v1"},
		Reason:         "ExecutorQuotaExceeded", Message: "exceeded quota: executors", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "sparklet-sidecar"}, Count: 3,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelRole + "=executor"})
		if err != nil {
			return false, nil
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		d, err := pods.Get(ctx, driver.Name, metav1.GetOptions{})
		return running == 2 && err == nil && d.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("the driver and two executors did not reach Running on kwok: %v", err)
	}
	requireLines(t, sparkletCheck(t, "pod/"+driver.Name, "-n", ns),
		"pod/"+driver.Name+": injected by sparklet ",
		", application "+appID+", Spark container spark\n",
		"  phase: Running\n",
		"  sidecar sparklet-sidecar: running",
		"  executors: 3 (1 Pending, 2 Running)\n",
		"Warning  ExecutorQuotaExceeded  sparklet-sidecar: exceeded quota: executors (x3)")

	// Shell completion offers the namespace's pods.
	out, err := exec.Command(filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet"),
		"__complete", "check", "--kubeconfig", env.Cluster.Kubeconfig(), "-n", ns, "").Output()
	if err != nil {
		t.Fatal(err)
	}
	requireLines(t, string(out), "plain\n", driver.Name+"\n", ":4\n")
}

// policy validate --server-dry-run lets the API server judge what local
// validation cannot: a PriorityClass or a ServiceAccount that does not
// exist, a field path the API does not know.
func TestPolicyValidateServerDryRun(t *testing.T) {
	ns := namespace(t, true)
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	validate := func(args ...string) (string, int) {
		out, errOut, code := sparklet(t, nil, append([]string{"policy", "validate", "--server-dry-run"}, args...)...)
		return out + errOut, code
	}
	example, _ := filepath.Abs("../examples/policy.yaml")
	if out, code := validate("-n", ns, example); code != 0 {
		t.Errorf("the example policy in a namespace with its driver ServiceAccount: exit %d\n%s", code, out)
	}
	out, code := validate("-n", "default", example)
	if code != 1 || !strings.Contains(out, `driver.defaults: the API server refuses it (dry run in namespace default): `) || !strings.Contains(out, `"spark-driver" not found`) {
		t.Errorf("the example policy where spark-driver does not exist: exit %d\n%s", code, out)
	}
	bad := write("bad.yaml", `driver:
  defaults:
    priorityClassName: no-such-class
executor:
  enforced:
    env:
    - {name: WHO, valueFrom: {fieldRef: {fieldPath: metadata.bogus}}}
namespaces:
  no-such-namespace:
    limits: {maxExecutors: 1}
`)
	out, code = validate("-n", ns, bad)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	requireLines(t, out,
		"  - driver.defaults: the API server refuses it (dry run in namespace "+ns+"): ", "no-such-class",
		"  - executor.enforced: the API server refuses it (dry run in namespace "+ns+"): spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: ", "metadata.bogus",
		"bad.yaml: note: namespaces.no-such-namespace: namespace no-such-namespace does not exist; its sections were not tried")
	// Nothing was stored.
	pods, err := env.Client.CoreV1().Pods(ns).List(ctxFor(t), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("the dry run left pods: %v, %v", pods, err)
	}
}

// sparklet inject reads the chart's policy ConfigMap from the cluster by
// default, as istioctl kube-inject reads its template.
func TestInjectReadsThePolicyFromTheCluster(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	const cmName = "inject-test-sparklet-policy"
	// The driver account is what the chart fills in; without one the
	// driver would run as default, which its executors would share.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: testenv.WebhookNamespace},
		Data: map[string]string{"policy.yaml": "spark:\n  defaults: {spark.ui.showConsoleProgress: false}\n" +
			"driver:\n  defaults: {serviceAccountName: " + testenv.DriverServiceAccount + "}\n"}}
	if _, err := env.Client.CoreV1().ConfigMaps(testenv.WebhookNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().ConfigMaps(testenv.WebhookNamespace).Delete(context.Background(), cmName, metav1.DeleteOptions{})
	})
	pod, err := os.ReadFile("../examples/spark-pi-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inject := func(args ...string) (string, string, int) {
		return sparklet(t, pod, append([]string{"inject", "-f", "-", "--log-level=error"}, args...)...)
	}
	out, stderr, code := inject("-n", ns, "--policy-namespace", testenv.WebhookNamespace, "--policy-configmap", cmName)
	if code != 0 || strings.TrimSpace(stderr) != "pod/spark-pi: injected" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	requireLines(t, out, "spark.ui.showConsoleProgress false\n", "spark.kubernetes.namespace "+ns+"\n")
	_, stderr, code = inject("--policy-namespace", testenv.WebhookNamespace, "--policy-configmap", "missing")
	if code != 1 || !strings.Contains(stderr, "read the policy from ConfigMap "+testenv.WebhookNamespace+"/missing: not found; name your release's with --policy-namespace and --policy-configmap, or work offline with --policy FILE or --ignore-cluster") {
		t.Errorf("a missing ConfigMap: exit %d, stderr %q", code, stderr)
	}
}
