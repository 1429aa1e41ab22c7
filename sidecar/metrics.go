package sidecar

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
)

type metrics struct {
	registry           *prometheus.Registry
	jvmRequests        *prometheus.CounterVec
	apiRequests        *prometheus.CounterVec
	createLatency      prometheus.Histogram
	quotaShortCircuits prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		jvmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_jvm_requests_total", Help: "Requests from the JVM by verb, resource and HTTP code.",
		}, []string{"verb", "resource", "code"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_api_requests_total", Help: "Requests the sidecar made to the API server by HTTP method and code.",
		}, []string{"method", "code"}),
		createLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sparklet_sidecar_executor_create_seconds", Help: "Latency of executor pod creates on the API server.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		quotaShortCircuits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sparklet_sidecar_quota_short_circuits_total", Help: "Executor POSTs answered from memory during a quota backoff.",
		}),
	}
	m.registry.MustRegister(m.jvmRequests, m.apiRequests, m.createLatency, m.quotaShortCircuits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchPhases exports executors by phase from the cache.
func (m *metrics) watchPhases(s *state) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sparklet_sidecar_executors", Help: "Executors of this application in the cache, all phases.",
	}, func() float64 { return float64(len(s.executors.all())) }))
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed} {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sparklet_sidecar_executors_by_phase", Help: "Executors of this application by phase.",
			ConstLabels: prometheus.Labels{"phase": string(phase)},
		}, func() float64 {
			n := 0
			for _, p := range s.executors.all() {
				if p.Phase == phase {
					n++
				}
			}
			return float64(n)
		}))
	}
}

// countingTransport counts the sidecar's own API requests.
type countingTransport struct {
	next    http.RoundTripper
	metrics *metrics
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.metrics.apiRequests.WithLabelValues(r.Method, code).Inc()
	return resp, err
}
