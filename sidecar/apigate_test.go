package sidecar

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A request that comes before the cache is filled waits for it, and one
// whose client gives up first is left unanswered without reaching the API.
func TestAPIGate(t *testing.T) {
	g := &apiGate{ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/version", nil).WithContext(ctx)) // the nil API would panic

	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/x/pods", nil))
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a request was answered before the API was ready")
	default:
	}
	g.open(&API{metrics: newMetrics(), token: []byte("t")})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not answered once the API was ready")
	}
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("answer %d, want the API's own 401 for a request without the token", rec.Code)
	}
}
