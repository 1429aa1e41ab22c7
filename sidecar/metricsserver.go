package sidecar

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sparklet/sparklet/internal/profiling"
)

// serveMetrics serves /metrics, /healthz and /readyz (and pprof when
// profiling) on cfg.MetricsListen until stop is called.
func (s *Sidecar) serveMetrics() (stop func(), err error) {
	ln, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("SPARKLET_METRICS_LISTEN %s: %w", s.cfg.MetricsListen, err)
	}
	srv := &http.Server{Handler: s.metricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

func (s *Sidecar) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		profiling.Register(mux)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-s.ready:
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "starting: the token is not written or the cache is not synced yet", http.StatusServiceUnavailable)
		}
	})
	return mux
}
