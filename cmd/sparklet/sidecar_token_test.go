package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestSidecarClientRereadsRotatedToken: the sidecar's client sends the
// token its file holds now, not the one it read at start, so the kubelet's
// rotation of the projected token reaches it. client-go rereads the file
// every minute, so the test takes about a minute.
func TestSidecarClientRereadsRotatedToken(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a minute: client-go rereads the token file every minute")
	}
	var mu sync.Mutex
	var seen string
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	}))
	defer server.Close()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A kubeconfig's tokenFile is read as rest.InClusterConfig reads the
	// pod's token: into BearerTokenFile.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server.URL, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	requests := 0
	client, err := sidecarClient(kubeconfig, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { requests++; return rt.RoundTrip(r) })
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := func(ctx context.Context) string {
		if _, err := client.ServerVersion(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	ctx := context.Background()
	if got := sent(ctx); got != "Bearer first" {
		t.Fatalf("Authorization %q, want the token file's", got)
	}
	if err := os.WriteFile(token, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		return sent(ctx) == "Bearer rotated", nil
	}); err != nil {
		t.Fatalf("the sidecar's client still sends %q 90 s after the token file changed", sent(ctx))
	}
	if requests == 0 {
		t.Error("the sidecar's transport wrapper saw no request")
	}
	t.Logf("rotated token sent %s after the file changed", time.Since(start).Round(time.Second))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
