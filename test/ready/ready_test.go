package ready

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitUntilOK(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := Wait(context.Background(), srv.URL, time.Millisecond, 10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d polls, want 3: two 503s, then 200", n)
	}
}

func TestWaitStopsWhenExited(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "never", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	gone := errors.New("process exited")
	err := Wait(context.Background(), srv.URL, time.Millisecond, 10*time.Second, func() error { return gone })
	if !errors.Is(err, gone) {
		t.Errorf("err = %v, want %v", err, gone)
	}
	if OK(srv.URL) {
		t.Error("a 503 counted as ready")
	}
}
