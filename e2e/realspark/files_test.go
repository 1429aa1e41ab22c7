package realspark

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// policyFilesPrefix is the placeholder for the file server's address in
// testdata/policy.yaml's fetch.allowedURLPrefixes.
const policyFilesPrefix = "http://suite-files.invalid/"

// fileServer serves the files the suite's pods fetch, on the pod runner's
// bridge address: the pods reach it from their network namespaces, and
// nothing else does.
type fileServer struct {
	prefix string // http://<bridge address>:<port>/
	srv    *http.Server
	mu     sync.Mutex
	files  map[string][]byte
}

func startFileServer(host string) (*fileServer, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("file server: %w", err)
	}
	s := &fileServer{prefix: "http://" + l.Addr().String() + "/", files: map[string][]byte{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[strings.TrimPrefix(r.URL.Path, "/")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// serve publishes data at path and returns its URL.
func (s *fileServer) serve(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.prefix + path
}

func (s *fileServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// writePolicy writes testdata/policy.yaml to path with prefix in place of
// policyFilesPrefix.
func writePolicy(path, prefix string) error {
	data, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte(policyFilesPrefix)) {
		return fmt.Errorf("testdata/policy.yaml does not name %s", policyFilesPrefix)
	}
	return os.WriteFile(path, bytes.ReplaceAll(data, []byte(policyFilesPrefix), []byte(prefix)), 0o644)
}

// serveFiles starts the file server on the pod runner's bridge and restarts
// the webhook with a policy that allows fetching from it.
func serveFiles(ctx context.Context, policyFile string) (*fileServer, error) {
	s, err := startFileServer(env.Runner.HostIP())
	if err != nil {
		return nil, err
	}
	if err := writePolicy(policyFile, s.prefix); err != nil {
		s.close()
		return nil, err
	}
	env.StopWebhook()
	if err := env.StartWebhook(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}
