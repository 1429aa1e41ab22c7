package fileserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server serves files and gates at one address.
type Server struct {
	prefix string // http://<host>:<port>/
	srv    *http.Server
	mu     sync.Mutex
	files  map[string][]byte
	gates  map[string]chan struct{}
}

// Start listens on host at a port of the kernel's choosing.
func Start(host string) (*Server, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("file server: %w", err)
	}
	s := &Server{prefix: "http://" + l.Addr().String() + "/", files: map[string][]byte{}, gates: map[string]chan struct{}{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Prefix is the URL every served path starts with, ending in a slash.
func (s *Server) Prefix() string { return s.prefix }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	data, ok := s.files[path]
	gate, gated := s.gates[path]
	s.mu.Unlock()
	switch {
	case ok:
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	case gated:
		select {
		case <-gate:
			_, _ = w.Write([]byte("open\n"))
		case <-r.Context().Done():
		}
	default:
		http.NotFound(w, r)
	}
}

// Serve publishes data at path and returns its URL.
func (s *Server) Serve(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.prefix + path
}

// Gate publishes a URL at path whose requests wait until open is called,
// then answer 200: a pod holds on it until the test lets it go on.
func (s *Server) Gate(path string) (url string, open func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gates[path] = gate
	return s.prefix + path, sync.OnceFunc(func() { close(gate) })
}

// Close stops the server, ending requests still waiting at a gate.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
}
