package sidecar

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWatchOverWebSocketAsFabric8 opens the executor watch the way fabric8
// does (WebSocket upgrade, Origin and bearer token, no subprotocol;
// AbstractWatchManager.startWatch, fabric8 6.7.2) and reads JSON events.
func TestWatchOverWebSocketAsFabric8(t *testing.T) {
	h := start(t, "", executorIn(1, corev1.PodRunning))
	url := "ws" + strings.TrimPrefix(h.base, "http") +
		"/api/v1/namespaces/spark/pods?labelSelector=spark-app-selector%3Dspark-app-1%2Cspark-role%3Dexecutor&allowWatchBookmarks=true&watch=true"
	cfg, err := websocket.NewConfig(url, h.base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Header.Set("Authorization", "Bearer "+h.token)
	cfg.Header.Set("User-Agent", "fabric8-kubernetes-client/6.7.2")
	conn, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() metav1.WatchEvent {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var msg string
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			t.Fatalf("read: %v", err)
		}
		var e metav1.WatchEvent
		if err := json.Unmarshal([]byte(msg), &e); err != nil {
			t.Fatalf("not a WatchEvent: %q", msg)
		}
		return e
	}
	if e := read(); e.Type != "ADDED" || !strings.Contains(string(e.Object.Raw), "pi-exec-1") {
		t.Errorf("first: %s %s", e.Type, e.Object.Raw)
	}
	p := executorIn(1, corev1.PodSucceeded)
	if _, err := h.client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := read(); e.Type != "MODIFIED" || !strings.Contains(string(e.Object.Raw), "Succeeded") {
		t.Errorf("second: %s %s", e.Type, e.Object.Raw)
	}
	if err := h.client.CoreV1().Pods(testNS).Delete(context.Background(), "pi-exec-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := read(); e.Type != "DELETED" {
		t.Errorf("third: %s", e.Type)
	}
}

// TestKubectlAgainstTheSidecar uses kubectl, which this project did not
// write, as an independent client: discovery, get, list by label, label,
// delete and a bounded watch.
func TestKubectlAgainstTheSidecar(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	h := start(t, "", executorIn(1, corev1.PodRunning), executorIn(2, corev1.PodRunning))
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// kubectl sends a token only over TLS: it uses the certificate the
		// sidecar wrote beside the token.
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--server", "https://" + h.sc.APIAddr(), "--token", h.token,
			"--certificate-authority", filepath.Join(filepath.Dir(h.sc.cfg.TokenFile), "ca.crt"), "-n", testNS,
			"--kubeconfig", os.DevNull, "--cache-dir", t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	h.waitListed("spark-role%3Dexecutor", 2)
	if out := run("get", "pods", "-l", "spark-exec-id in (2)", "-o", "name"); strings.TrimSpace(out) != "pod/pi-exec-2" {
		t.Errorf("list by label: %q", out)
	}
	if out := run("get", "pod", "pi", "-o", "jsonpath={.metadata.uid}"); out != "driver-uid" {
		t.Errorf("get driver: %q", out)
	}
	run("label", "pod", "pi-exec-1", "spark-exec-inactive=true")
	h.waitListed("spark-exec-inactive%3Dtrue", 1)
	run("delete", "pod", "pi-exec-2", "--wait=false")
	h.waitListed("spark-role%3Dexecutor", 1)
	if out := run("get", "pods", "-w", "--request-timeout=2s", "-o", "name"); !strings.Contains(out, "pod/pi-exec-1") {
		t.Errorf("watch: %q", out)
	}
}

// TestPythonClientAgainstTheSidecar uses Debian's python3-kubernetes (make
// test installs it) as a second independent client.
func TestPythonClientAgainstTheSidecar(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kubernetes").Run(); err != nil {
		if os.Getenv("SPARKLET_E2E") == "1" {
			t.Fatalf("python3-kubernetes is missing; make test installs it with apt-get: %v", err)
		}
		t.Skip("python3-kubernetes not installed (apt-get install python3-kubernetes)")
	}
	h := start(t, "", executorIn(1, corev1.PodRunning))
	h.waitListed("spark-role%3Dexecutor", 1)
	cmd := exec.Command(python, "testdata/conformance.py")
	cmd.Env = append(os.Environ(), "SERVER="+h.base, "TOKEN="+h.token, "NS="+testNS, "APP="+testApp)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("python client: %v\n%s", err, out)
	}
}
