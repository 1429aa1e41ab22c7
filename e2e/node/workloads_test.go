package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/node"
)

// workloads changes the release's policy as a platform team would, with
// `helm upgrade`: drivers may fetch from the suite's file server only, and
// executors ask for a tenth of a core by default, as the node has two.
// Then stock Spark runs through it as users run it, in a namespace opted
// in by its label as docs/install.md shows, with the driver
// ServiceAccount made there by hand: PySpark with its script fetched, the
// CronJob example, the Spark UI through `kubectl port-forward`.
func workloads(ctx context.Context, t *testing.T, release, releaseNS string) {
	ns := optedInNamespace(ctx, t, release, "spark-workloads")
	// Pods reach the host only at the node's veth (test/node): no default
	// route leaves their network.
	files, err := fileserver.Start(node.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(files.Close)
	upgradePolicy(ctx, t, release, releaseNS, ns, files.Prefix())

	// Each pinned version: e2e/realspark's TestPySpark leaves them to it.
	for _, d := range pinned(t) {
		t.Run("PySpark-"+d.Version, func(t *testing.T) { pySpark(ctx, t, files, ns, d.Version) })
	}
	t.Run("CronJob", func(t *testing.T) { sparkPiCronJob(ctx, t, ns) })
	t.Run("SparkUI", func(t *testing.T) { sparkUI(ctx, t, files, ns) })
}

// upgradePolicy runs `helm upgrade --reuse-values` with the policy values
// below, waits for the webhook Deployment's rollout (the chart rolls it
// when the policy changes), and checks that a fetch from elsewhere is
// refused.
func upgradePolicy(ctx context.Context, t *testing.T, release, releaseNS, ns, filesPrefix string) {
	values := filepath.Join(t.TempDir(), "policy-values.yaml")
	if err := os.WriteFile(values, []byte(`policy:
  fetch:
    allowedURLPrefixes: ["`+filesPrefix+`"]
    requireSHA256: true
  spark:
    defaults:
      spark.kubernetes.executor.request.cores: 100m
`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	helm(ctx, t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reuse-values", "-f", values)
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+release+"-sparklet", "--timeout=4m")

	// The old webhook pods leave the Service's endpoints as they end; an
	// admission may still reach one until kube-proxy has caught up.
	elsewhere := `apiVersion: v1
kind: Pod
metadata:
  name: fetch-elsewhere
  labels: {spark-role: driver}
  annotations:
    sparklet.io/fetch: |
      - url: https://repo.example.com/py/groupcount.py
        sha256: "af3c05ce9c08af8d10523d94eaed87449083e88ca826dbf73597fabd4505cde2"
spec:
  containers: [{name: spark, image: apache/spark:4.3.0-python3, command: [/opt/spark/bin/spark-submit], args: [local:///opt/sparklet/deps/groupcount.py]}]
`
	var out []byte
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cp.Kubeconfig(), "-n", ns, "create", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(elsewhere)
		var err error
		out, err = cmd.CombinedOutput()
		return err != nil && strings.Contains(string(out), "fetch.allowedURLPrefixes"), nil
	})
	if err != nil {
		t.Fatalf("after helm upgrade, a driver fetching outside %s: %s; want the webhook's refusal naming fetch.allowedURLPrefixes", filesPrefix, out)
	}
	t.Logf("helm upgrade of the policy to its refusals in force: %s", time.Since(start).Round(100*time.Millisecond))
}
