package node

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/sparklog"
	"github.com/sparklet/sparklet/vocab"
)

// TestHelmInstall installs the chart as docs/install.md tells a platform
// team, on the real node: the webhook Deployment's pods run as containers
// with the chart's securityContext and answer the API server through
// their Service, the policy-check hook Job runs, `helm test` passes, a
// driver pod is injected, and `helm uninstall` removes the release.
func TestHelmInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	t.Cleanup(cancel) // the parallel subtests below run after this function returns
	const release, releaseNS, jobs = "sparklet", "sparklet-system", "spark-jobs"
	if _, err := cp.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobs}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().Namespaces().Delete(context.Background(), jobs, metav1.DeleteOptions{})
	})

	// docs/install.md in its self-managed TLS mode, with the namespace
	// listed so that the chart makes its driver ServiceAccount and `helm
	// test` has a namespace to test.
	helm(ctx, t, "install", release, chartDir(t), "--namespace", releaseNS, "--create-namespace",
		"--set", "tls.certManager.enabled=false", "--set", "namespaces.list={"+jobs+"}")
	t.Cleanup(func() {
		helm(context.Background(), t, "uninstall", release, "--namespace", releaseNS, "--ignore-not-found")
	})
	kubectl(ctx, t, "label", "namespace", jobs, "sparklet.io/inject=enabled")
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/sparklet-sparklet", "--timeout=4m")

	pods, err := cp.Client().CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=sparklet"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "sparklet-node" {
			continue
		}
		running++
		// The chart's securityContext and limits, as the kernel holds them.
		c, err := nd.Inspect(&p, "webhook")
		if err != nil {
			t.Fatal(err)
		}
		limit := p.Spec.Containers[0].Resources.Limits.Memory().Value()
		if c.UID != 65532 || c.GID != 65532 || c.CapEff != "0000000000000000" || !c.ReadOnlyRoot || c.MemoryLimit != limit {
			t.Errorf("webhook container of %s: %+v, want uid and gid 65532, no capabilities, a read-only root and a memory limit of %d", p.Name, c, limit)
		}
	}
	if running == 0 {
		t.Fatalf("no webhook pod Running on the real node: %d pods", len(pods.Items))
	}

	helm(ctx, t, "test", release, "--namespace", releaseNS)

	// A driver pod the API server sends to the webhook pods through their
	// Service: admitted with the sidecar injected.
	out := kubectl(ctx, t, "-n", jobs, "create", "--dry-run=server", "-o", "jsonpath={.spec.initContainers[*].name}", "-f", "-",
		withStdin(`apiVersion: v1
kind: Pod
metadata: {name: injected, labels: {spark-role: driver}}
spec:
  containers: [{name: spark, image: apache/spark:4.3.0, args: [driver, --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples_2.13-4.3.0.jar]}]
`))
	if !strings.Contains(out, "sparklet") {
		t.Fatalf("driver pod's init containers %q: sparklet's sidecar not injected through the chart's webhook", out)
	}

	// Each pinned version: e2e/realspark's TestSparkPi leaves them to it.
	for _, d := range pinned(t) {
		t.Run("SparkPi-"+d.Version, func(t *testing.T) { sparkPi(ctx, t, jobs, d.Version, d.Scala) })
	}
	t.Run("Job", func(t *testing.T) { sparkPiJob(ctx, t, jobs) })
	t.Run("KillDriverJVM", func(t *testing.T) { driverKilled(ctx, t, jobs) })
	t.Run("KillSidecar", func(t *testing.T) { sidecarKilled(ctx, t, jobs) })
	t.Run("RestartAPIServer", func(t *testing.T) { apiServerRestarted(ctx, t, jobs, releaseNS) })
	// Spark's PVC resize takes ten minutes: its driver starts here, after
	// the API server's restart, and is checked by PVCResize below.
	var pvcRun *pvcResizeRun
	pvcStarted := false
	t.Run("PVCResizeStart", func(st *testing.T) {
		pvcStarted = true
		pvcRun = startPVCResize(ctx, laterT{T: st, later: t}, release, releaseNS)
	})
	t.Run("PodSecurityRestricted", func(t *testing.T) { restrictedDriver(ctx, t, jobs) })
	t.Run("Workloads", func(t *testing.T) { workloads(ctx, t, release, releaseNS) })
	t.Run("RestrictedSparkPi", func(t *testing.T) { restrictedSparkPi(ctx, t, jobs) })
	t.Run("RestrictedNonRootByName", func(t *testing.T) { nonRootByName(ctx, t, jobs) })
	t.Run("Sidecar", func(t *testing.T) { sidecarOnTheNode(ctx, t, release, releaseNS, jobs) })
	t.Run("TokenRotation", func(t *testing.T) { tokenRotation(ctx, t, release, releaseNS, jobs) })
	t.Run("HistoryServer", func(t *testing.T) { historyServer(ctx, t, release, releaseNS) })
	t.Run("HistoryPVC", func(t *testing.T) { historyOnClaim(ctx, t, release, releaseNS) })
	t.Run("ExecutorOOMKilled", func(t *testing.T) { executorOOMKilled(ctx, t, release, releaseNS) })
	t.Run("PVCResize", func(t *testing.T) {
		switch {
		case pvcStarted && pvcRun == nil:
			t.Skip("PVCResizeStart failed")
		case !pvcStarted:
			pvcRun = startPVCResize(ctx, t, release, releaseNS)
		}
		pvcResized(ctx, t, pvcRun)
	})

	// The last three run in the release as the subtests above left it and
	// in the jobs namespace, whose policy none of them changes, one at a
	// time: side by side, and beside e2e/realspark's JVMs on a two-core
	// machine, each took minutes longer than alone.
	t.Cleanup(func() {
		helm(context.Background(), t, "uninstall", release, "--namespace", releaseNS)
		if _, err := cp.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "sparklet-sparklet", metav1.GetOptions{}); err == nil {
			t.Errorf("helm uninstall left the MutatingWebhookConfiguration")
		}
	})
	t.Run("DynamicAllocation", func(t *testing.T) { dynamicAllocation(ctx, t, jobs) })
	t.Run("ExecutorResize", func(t *testing.T) { executorResize(ctx, t, jobs) })
	t.Run("ConnectServer", func(t *testing.T) { connectServer(ctx, t, jobs) })
}

func chartDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../../charts/sparklet")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

type runOption func(*exec.Cmd)

func withStdin(s string) runOption { return func(c *exec.Cmd) { c.Stdin = strings.NewReader(s) } }

// helm runs bin/helm against the control plane, failing t on an error.
func helm(ctx context.Context, t testing.TB, args ...string) string {
	t.Helper()
	return command(ctx, t, filepath.Join(binDir, "helm"), append(args, "--kubeconfig", cp.Kubeconfig()))
}

// kubectl runs kubectl against the control plane, failing t on an error.
func kubectl(ctx context.Context, t testing.TB, args ...any) string {
	t.Helper()
	var strs []string
	var opts []runOption
	for _, a := range args {
		switch a := a.(type) {
		case string:
			strs = append(strs, a)
		case runOption:
			opts = append(opts, a)
		}
	}
	return command(ctx, t, "kubectl", append(strs, "--kubeconfig", cp.Kubeconfig()), opts...)
}

func command(ctx context.Context, t testing.TB, bin string, args []string, opts ...runOption) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	for _, o := range opts {
		o(cmd)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sparkPi runs stock SparkPi from the apache/spark image of version as a
// plain driver pod in the opted-in namespace ns: the driver asks the
// sidecar for two executors, which register and compute, and when the
// driver ends the sidecar ends and the application leaves nothing. It
// checks the result through the kubelet's log. The requests are small:
// the node has two cores.
func sparkPi(ctx context.Context, t *testing.T, ns, version, scala string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	name := "spark-pi-" + strings.ReplaceAll(version, ".", "-")
	pod := "apiVersion: v1\nkind: Pod\n" + strings.Replace(sparkPiTemplate(version, scala, 2), "metadata:\n", "metadata:\n  name: "+name+"\n", 1)
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(pod))
	appID := driverAppID(ctx, t, ns, name)
	execs := executors.Track(t, cp.Client(), ns, vocab.LabelAppID+"="+appID)
	done := waitPodPhase(ctx, t, ns, name, corev1.PodSucceeded)
	t.Logf("SparkPi %s on the real node: kubectl apply to Succeeded in %s", version, time.Since(start).Round(100*time.Millisecond))
	if done.Spec.NodeName != "sparklet-node" {
		t.Errorf("driver ran on %q, want the real node", done.Spec.NodeName)
	}
	logs := podLogs(ctx, t, ns, name, "spark")
	if pi, ok := sparklog.Pi(logs); !ok || math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("driver log has no result within 0.01 of π (found %v: %v):\n%s", ok, pi, tail(logs, 40))
	}
	if n := strings.Count(logs, "Registered executor"); n < 2 {
		t.Errorf("%d executors registered with the driver, want 2\n%s", n, tail(logs, 40))
	}
	if _, _, seen, _ := execs.Counts(); seen != 2 {
		t.Errorf("%d executor pods of %s, want exactly 2", seen, appID)
	}
	if s := initContainerState(done, patches.SidecarName); s.Terminated == nil {
		t.Errorf("sidecar still %+v after the pod completed", s)
	}
	executors.WaitClean(t, cp.Client(), ns, appID, time.Minute)
}

// pinned is the Spark versions the tests run (hack/spark/versions): the
// node has an apache/spark image of each.
func pinned(t *testing.T) []spark.Dist {
	t.Helper()
	dists, err := spark.Pinned()
	if err != nil {
		t.Fatal(err)
	}
	return dists
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// restrictedDriver puts ns at Pod Security restricted (as it was after)
// and creates (dry run, after every admission plugin) a driver whose
// Spark container meets it: what sparklet injects beside it (the conf
// init container with the Spark container's security context, the
// sidecar with its own) passes too. Without the Spark container's
// context the pod is refused.
func restrictedDriver(ctx context.Context, t *testing.T, ns string) {
	enforceRestricted(ctx, t, ns)
	pod := func(securityContext string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: restricted, labels: {spark-role: driver}}
spec:
  containers:
  - name: spark
    image: apache/spark:4.3.0
    args: [driver, --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples_2.13-4.3.0.jar]
` + securityContext
	}
	out := kubectl(ctx, t, "-n", ns, "create", "--dry-run=server", "-o", "jsonpath={.spec.initContainers[*].name}", "-f", "-", withStdin(pod(restrictedSparkContext)))
	if !strings.Contains(out, "sparklet-sidecar") {
		t.Errorf("restricted driver admitted without the sidecar: init containers %q", out)
	}
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cp.Kubeconfig(), "-n", ns, "create", "--dry-run=server", "-f", "-")
	cmd.Stdin = strings.NewReader(pod(""))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "restricted") {
		t.Errorf("a driver without a security context in a restricted namespace: %v\n%s; want Pod Security's refusal", err, out)
	}
}

// sparkPiTemplate is a SparkPi driver pod's metadata (without a name) and
// spec. The requests are small: the node has two cores.
func sparkPiTemplate(version, scala string, executors int) string {
	return fmt.Sprintf(`metadata:
  labels: {spark-role: driver}
  annotations:
    sparklet.io/spark-conf: |
      spark.executor.instances %d
      spark.executor.memory 512m
      spark.kubernetes.executor.request.cores 100m
      spark.driver.memory 512m
spec:
  restartPolicy: Never
  containers:
  - name: spark
    image: apache/spark:%s
    args: [driver, --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples_%s-%s.jar, "20"]
    resources:
      requests: {cpu: 200m, memory: 1Gi}
      limits: {memory: 1Gi}
`, executors, version, scala, version)
}
