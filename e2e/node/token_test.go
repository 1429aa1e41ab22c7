package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// tokenLifetime is the shortest projected token lifetime the API server
// accepts; the kubelet renews it after 80% (pkg/kubelet/token, v1.37.2).
const tokenLifetime = 600

// tokenRotation shows the kubelet's rotation of the sidecar's projected
// token reaching the sidecar: with the policy's shortest lifetime, a
// driver waits for an executor no node can take; once the kubelet has
// written a new token and the first one has expired (and client-go has
// had its minute to reread the file), the test deletes the executor, and
// the sidecar creates the replacement the JVM asks for, which only a
// valid token can do; the sidecar saw no 401. It takes about 12 minutes,
// so it runs only with SPARKLET_E2E_LONG=1.
func tokenRotation(ctx context.Context, t *testing.T, release, releaseNS, ns string) {
	if os.Getenv("SPARKLET_E2E_LONG") != "1" {
		t.Skipf("takes about 12 minutes: the kubelet renews a %d s token only after 80%% of it; set SPARKLET_E2E_LONG=1 to run it", tokenLifetime)
	}
	ctx, cancel := context.WithTimeout(ctx, 16*time.Minute)
	defer cancel()
	setPolicy(ctx, t, release, releaseNS, "policy.sidecar.tokenExpirationSeconds", strconv.Itoa(tokenLifetime), "3600")

	const name = "spark-token"
	pod := startPendingDriver(ctx, t, ns, name, 1)
	file := filepath.Join(nd.PodVolume(pod, "projected", patches.VolumeToken), "token")
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	issued, expires := tokenTimes(t, first)
	if expires.Sub(issued) != tokenLifetime*time.Second {
		t.Fatalf("the sidecar's token lives %s, want the policy's %d s", expires.Sub(issued), tokenLifetime)
	}

	var renewed time.Time
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Second, (tokenLifetime+60)*time.Second, true, func(context.Context) (bool, error) {
		now, err := os.ReadFile(file)
		if err == nil && string(now) != string(first) {
			renewed, _ = tokenTimes(t, now)
			return true, nil
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the kubelet never renewed the sidecar's token (issued %s): %v", issued.Format(time.RFC3339), err)
	}
	t.Logf("token issued %s, renewed by the kubelet %s later", issued.Format(time.TimeOnly), renewed.Sub(issued).Round(time.Second))

	// The first token must be dead, and client-go's minute to reread the
	// file past, before the sidecar's next call proves it uses the new one.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		return time.Now().After(expires.Add(70 * time.Second)), nil
	}); err != nil {
		t.Fatal(err)
	}
	selector := vocab.LabelAppID + "=" + pod.Labels[vocab.LabelAppID] + "," + vocab.LabelRole + "=executor"
	before, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(before.Items) != 1 {
		t.Fatalf("executors of %s: %v %v, want one Pending", name, before, err)
	}
	kubectl(ctx, t, "-n", ns, "delete", "pod", before.Items[0].Name, "--wait=false")
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		for _, p := range l.Items {
			if p.Name != before.Items[0].Name {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("no replacement executor after the first token expired: %v\nsidecar:\n%s", err, tail(podLogs(ctx, t, ns, name, patches.SidecarName), 20))
	}
	metrics := "http://" + pod.Status.PodIP + ":" + strconv.Itoa(int(sidecarPort(t, pod, "metrics"))) + "/metrics"
	if n, err := sidecarMetric(ctx, metrics, "sparklet_sidecar_api_requests_total", `code="401"`); err != nil || n != 0 {
		t.Errorf("the sidecar's API requests refused as unauthenticated: %d (%v), want none", n, err)
	}
	t.Logf("replacement executor created by the sidecar %s after the first token expired", time.Since(expires).Round(time.Second))
}

// setPolicy sets one chart value of the installed release until t ends.
func setPolicy(ctx context.Context, t *testing.T, release, releaseNS, key, value, after string) {
	set := func(ctx context.Context, v string) {
		helm(ctx, t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reuse-values", "--set", key+"="+v)
		kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+release+"-sparklet", "--timeout=3m")
		waitOldPodsGone(ctx, t, releaseNS, release+"-sparklet")
	}
	set(ctx, value)
	t.Cleanup(func() { set(context.Background(), after) })
}

// waitOldPodsGone waits until the deployment has no terminating pod: a
// rollout is complete before its old pods have drained (the chart's
// webhook.drainSeconds), and until then they may still answer with the
// old policy.
func waitOldPodsGone(ctx context.Context, t testing.TB, ns, deployment string) {
	t.Helper()
	d, err := cp.Client().AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel := metav1.FormatLabelSelector(d.Spec.Selector)
	terminating := -1
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil
		}
		terminating = 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		return terminating == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: %d old pods still terminating a minute after the rollout: %v", deployment, terminating, err)
	}
}

// tokenTimes reads a service-account token's iat and exp claims.
func tokenTimes(t *testing.T, jwt []byte) (issued, expires time.Time) {
	t.Helper()
	parts := strings.Split(string(jwt), ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Iat, Exp int64 }
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Unix(claims.Iat, 0), time.Unix(claims.Exp, 0)
}
