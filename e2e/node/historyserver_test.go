package node

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// historyServer turns on the chart's history server with helm upgrade, on
// the real node, against a store nothing serves: Spark's HistoryServer
// from the apache/spark image becomes Ready (its probe on /api/v1/version)
// as user 185 with a read-only root and no capabilities, beside
// history-sync, which reads the Secret only it mounts and says the store
// is unreachable. Then it turns the server off again.
func historyServer(ctx context.Context, t *testing.T, release, releaseNS string) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	kubectl(ctx, t, "-n", releaseNS, "create", "secret", "generic", "history-read",
		"--from-literal=AWS_ACCESS_KEY_ID=reader", "--from-literal=AWS_SECRET_ACCESS_KEY=not-a-real-key")
	helm(ctx, t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reuse-values",
		"--set", "history.server.enabled=true", "--set", "history.server.s3.endpoint=http://127.0.0.1:9",
		"--set", "history.server.s3.bucket=spark-history", "--set", "history.server.s3.secretName=history-read",
		"--set", "history.server.resources.requests.cpu=10m", "--set", "history.server.resources.requests.memory=256Mi",
		"--set", "history.server.resources.limits.memory=768Mi")
	t.Cleanup(func() {
		helm(context.Background(), t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reuse-values", "--set", "history.server.enabled=false")
		kubectl(context.Background(), t, "-n", releaseNS, "delete", "secret", "history-read")
	})
	deploy := release + "-sparklet-history"
	start := time.Now()
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+deploy, "--timeout=6m")
	t.Logf("history server Ready on the real node %s after helm upgrade", time.Since(start).Round(100*time.Millisecond))

	pods, err := cp.Client().CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=history-server"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("history server pods: %v %v", pods, err)
	}
	p := pods.Items[0]
	for name, uid := range map[string]int{"history-server": 185, "history-sync": 65532} {
		c, err := nd.Inspect(&p, name)
		if err != nil {
			t.Fatal(err)
		}
		if c.UID != uid || c.CapEff != "0000000000000000" || !c.ReadOnlyRoot {
			t.Errorf("%s: %+v, want uid %d, no capabilities and a read-only root", name, c, uid)
		}
	}
	waitLog(ctx, t, releaseNS, p.Name, "history-sync", "mirror pass failed; retrying")
	if logs := podLogs(ctx, t, releaseNS, p.Name, "history-server"); !strings.Contains(logs, "HistoryServer") {
		t.Errorf("the history server's log does not name it:\n%s", tail(logs, 20))
	}
}
