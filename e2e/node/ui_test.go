package node

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/syncbuffer"
)

// sparkUI runs a PySpark driver that holds its application open until
// the test lets it go, reaches its Spark UI (port 4040) with `kubectl
// port-forward` to the driver pod, as a user does, and reads the
// application from the UI's REST API: its name, and the id the webhook
// gave it. Then the driver ends, Succeeded, with no executor left.
func sparkUI(ctx context.Context, t *testing.T, files *fileserver.Server, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	script, err := os.ReadFile("testdata/held.py")
	if err != nil {
		t.Fatal(err)
	}
	release, letGo := files.Gate("ui/release")
	defer letGo()
	const name = "held-open"
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {spark-role: driver}
  annotations:
    sparklet.io/fetch: |
      - url: %s
        sha256: "%x"
    sparklet.io/spark-conf: |
      spark.executor.instances 1
      spark.executor.memory 512m
      spark.driver.memory 512m
spec:
  restartPolicy: Never
  containers:
  - name: spark
    image: apache/spark:4.3.0-python3
    command: [/opt/spark/bin/spark-submit]
    args: [local:///opt/sparklet/deps/held.py, %q]
    resources:
      requests: {cpu: 200m, memory: 1Gi}
      limits: {memory: 1Gi}
`, name, files.Serve("py/held.py", script), sha256.Sum256(script), release)
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(pod))
	t.Cleanup(func() { _ = cp.Client().CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	appID := driverAppID(ctx, t, ns, name)
	waitPodPhase(ctx, t, ns, name, corev1.PodRunning)

	// The script prints its count once its job has run on the executors:
	// the SparkContext, its UI among it, has started by then.
	waitLog(ctx, t, ns, name, "spark", "counted 100\n")
	local, forwarder := portForward(ctx, t, ns, "pod/"+name, 4040)
	body, err := getRetrying(ctx, "http://"+local+"/api/v1/applications", 2*time.Minute)
	if err != nil {
		t.Fatalf("the Spark UI through kubectl port-forward: %v\nkubectl port-forward said:\n%s", err, forwarder)
	}
	t.Logf("Spark UI through kubectl port-forward %s after kubectl apply: %s", time.Since(start).Round(100*time.Millisecond), body)
	var apps []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(body), &apps); err != nil || len(apps) != 1 || apps[0].Name != "held-open" || apps[0].ID != appID {
		t.Errorf("the UI's applications %s (%v), want one named held-open with the id %s", body, err, appID)
	}

	letGo()
	waitPodPhase(ctx, t, ns, name, corev1.PodSucceeded)
	t.Logf("the held driver: kubectl apply to Succeeded in %s", time.Since(start).Round(100*time.Millisecond))
	waitExecutorsGone(ctx, t, ns, appID)
}

// portForward runs `kubectl port-forward target :port` until t ends and
// returns the local address it listens on and what it prints on stderr.
func portForward(ctx context.Context, t *testing.T, ns, target string, port int) (string, *syncbuffer.Buffer) {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", cp.Kubeconfig(), "-n", ns, "port-forward", "--address", "127.0.0.1", target, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuffer.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// kubectl prints the address once it listens; its output ends only
	// when it exits.
	forwarding := regexp.MustCompile(`^Forwarding from (127\.0\.0\.1:\d+) -> \d+`)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1], stderr
		}
	}
	t.Fatalf("kubectl port-forward %s exited without listening:\n%s", target, stderr)
	return "", nil
}

// getRetrying fetches url until it answers 200 or within has passed, each
// try for up to 30 seconds: one 10-second try timed out in a CI run, while
// the suite loaded both cores (the UI starts its REST servlet on the first
// call).
func getRetrying(ctx context.Context, url string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tries := 0
	for {
		tries++
		try, cancelTry := context.WithTimeout(ctx, 30*time.Second)
		body, err := get(try, url)
		cancelTry()
		if err == nil {
			return body, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%d tries in %s, the last: %w", tries, within, err)
		case <-time.After(time.Second):
		}
	}
}

// get fetches url and returns its body, or an error for any status but 200.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}
