package charts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// TestHelmOnTheLocalAPIServer installs the chart with helm on the local
// control plane (no kwok: the only pod that runs is helm test's, run here
// as described at runTestPods). It checks that cert-manager mode without
// cert-manager fails naming the value, that the API server accepts the
// PodMonitor and ServiceMonitor against prometheus-operator's CRDs, and
// that `helm test` passes with the webhook injecting and fails when the
// webhook is gone.
func TestHelmOnTheLocalAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{BinDir: binDir(t), Dir: t.TempDir(), NoKwok: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	h := helm(t)
	helmArgs := func(args ...string) []string {
		return append(args, "--kubeconfig", c.Kubeconfig())
	}

	t.Run("cert-manager missing", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, h, helmArgs("install", "cm", "sparklet", "--namespace", "cm", "--create-namespace")...).CombinedOutput()
		if err == nil {
			t.Fatalf("helm install in cert-manager mode succeeded on a cluster without cert-manager:\n%s", out)
		}
		if !strings.Contains(string(out), "set tls.certManager.enabled=false") {
			t.Errorf("the failure does not name the value to change:\n%s", out)
		}
	})

	t.Run("monitors against prometheus-operator CRDs", func(t *testing.T) {
		kubectl(ctx, t, c, "apply", "--server-side", "-f", filepath.Join("testdata", "crds", "prometheus-operator"))
		kubectl(ctx, t, c, "wait", "--for=condition=Established", "--timeout=60s",
			"crd/podmonitors.monitoring.coreos.com", "crd/servicemonitors.monitoring.coreos.com")
		kubectl(ctx, t, c, "create", "namespace", releaseNS)
		r := render(t, "service-monitor.yaml", "pod-monitor.yaml")
		var docs []string
		for key, doc := range r.docs {
			if strings.HasPrefix(key, "PodMonitor/") || strings.HasPrefix(key, "ServiceMonitor/") {
				docs = append(docs, string(doc))
			}
		}
		if len(docs) != 2 {
			t.Fatalf("rendered %d monitors, want a PodMonitor and a ServiceMonitor", len(docs))
		}
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(strings.Join(docs, "\n---\n"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the API server refused the monitors: %v\n%s", err, out)
		}
	})

	t.Run("helm test", func(t *testing.T) {
		const rel, ns = "tested", "sparklet-tested"
		full := rel + "-sparklet"
		for _, n := range []string{"team-a", "team-b"} {
			kubectl(ctx, t, c, "create", "namespace", n)
		}
		// No node runs the pre-install policy check's Job here;
		// policycheck_test.go runs its command line instead.
		values := []string{"-f", filepath.Join("testdata", "self-managed.yaml"), "-f", filepath.Join("testdata", "namespace-list.yaml"),
			"--set", "policyCheck.enabled=false"}
		run(t, h, helmArgs(append([]string{"install", rel, "sparklet", "--namespace", ns, "--create-namespace", "--wait=false"}, values...)...)...)

		// The webhook runs here as local processes, and the API server
		// calls it at its loopback address instead of the Service.
		d, err := c.Client().AppsV1().Deployments(ns).Get(ctx, full, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := c.Client().CoreV1().ConfigMaps(ns).Get(ctx, full+"-policy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// helm looked up the API server's ClusterIP for the mesh exclusions.
		k, err := c.Client().CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pol, err := policy.Parse([]byte(cm.Data["policy.yaml"]), "dev")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{k.Spec.ClusterIP + "/32"}; !reflect.DeepEqual(pol.Mesh.APIServerCIDRs, want) {
			t.Errorf("the installed policy's mesh.apiServerCIDRs = %v, want %v:\n%s", pol.Mesh.APIServerCIDRs, want, cm.Data["policy.yaml"])
		}
		ports := freePorts(t, 1)
		one := int32(1)
		d.Spec.Replicas = &one
		patch := fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/clientConfig","value":{"url":"https://127.0.0.1:%d/mutate-pods"}}]`, ports[0])
		if _, err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, full, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		runReplicas(ctx, t, c, ns, full, d, cm.Data["policy.yaml"], ports, "")
		pod := fixtures.LoadPod(t, "../examples/spark-pi-pod.yaml")
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := c.Client().CoreV1().Pods("team-a").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && got.Annotations[vocab.AnnotationStatus] != "", nil
		})
		if err != nil {
			t.Fatalf("the webhook does not inject yet: %v", err)
		}

		stop := runTestPods(ctx, t, c, ns)
		defer stop()
		out := run(t, h, helmArgs("test", rel, "--namespace", ns, "--timeout", "2m")...)
		if !strings.Contains(out, "Phase:          Succeeded") && !strings.Contains(out, "Phase: Succeeded") {
			t.Errorf("helm test did not report success:\n%s", out)
		}

		// Without the webhook the dry-run driver comes back uninjected
		// and helm test fails.
		if err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, full, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := c.Client().CoreV1().Pods("team-a").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && got.Annotations[vocab.AnnotationStatus] == "", nil
		})
		if err != nil {
			t.Fatalf("the API server still calls the deleted webhook: %v", err)
		}
		failed, err := exec.CommandContext(ctx, h, helmArgs("test", rel, "--namespace", ns, "--timeout", "2m")...).CombinedOutput()
		if err == nil {
			t.Errorf("helm test passed with no webhook:\n%s", failed)
		}
		run(t, h, helmArgs("uninstall", rel, "--namespace", ns, "--wait")...)
		for _, key := range []string{"RoleBinding", "Role"} {
			out, _ := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig(), "-n", "team-a", "get", strings.ToLower(key), full+"-test").CombinedOutput()
			if !strings.Contains(string(out), "NotFound") {
				t.Errorf("helm uninstall left the test %s:\n%s", key, out)
			}
		}
	})
}

func kubectl(ctx context.Context, t *testing.T, c *cluster.Cluster, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// runTestPods plays the kubelet for helm test's Pods in ns: the control
// plane has no node, so each Pod stays unscheduled; its one container's
// arguments run here through the local kubectl (what the image's
// entrypoint is) as the Pod's ServiceAccount, and the Pod's phase becomes
// Succeeded or Failed by the exit code.
func runTestPods(ctx context.Context, t *testing.T, c *cluster.Cluster, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ran := map[types.UID]bool{}
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=test"})
			if err != nil {
				return false, nil
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if ran[p.UID] || p.DeletionTimestamp != nil {
					continue
				}
				ran[p.UID] = true
				runTestPod(ctx, t, c, p)
			}
			return false, nil
		})
	}()
	return func() { cancel(); <-done }
}

func runTestPod(ctx context.Context, t *testing.T, c *cluster.Cluster, p *corev1.Pod) {
	home, err := os.MkdirTemp("", "helm-test-pod-")
	if err != nil {
		t.Error(err)
		return
	}
	defer os.RemoveAll(home)
	kubeconfig := filepath.Join(home, "kubeconfig")
	out, err := []byte(nil), writeServiceAccountKubeconfig(ctx, c, p.Namespace, p.Spec.ServiceAccountName, kubeconfig)
	if err == nil {
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, p.Spec.Containers[0].Args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err = cmd.CombinedOutput()
	} else {
		out = []byte(err.Error())
	}
	code := int32(0)
	phase := corev1.PodSucceeded
	if err != nil {
		code, phase = 1, corev1.PodFailed
	}
	t.Logf("helm test pod %s: exit %d: %s", p.Name, code, out)
	// The scheduler updates the unschedulable Pod too, hence the retries.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Client().CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: string(out)}}}}
		_, err = c.Client().CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("status of %s: %v", p.Name, err)
	}
}
