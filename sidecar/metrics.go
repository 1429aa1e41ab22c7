package sidecar

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/internal/buildinfo"
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
	m.registry.MustRegister(m.jvmRequests, m.apiRequests, m.createLatency, m.quotaShortCircuits, buildinfo.Collector(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchPhases exports this application's executors by phase from the
// cache, as one gauge sparklet_sidecar_executors{phase}.
func (m *metrics) watchPhases(s *state) {
	m.registry.MustRegister(&executorPhases{s: s, desc: prometheus.NewDesc("sparklet_sidecar_executors",
		"Executors of this application in the cache, by phase (Pending, Running, Succeeded, Failed, Unknown).", []string{"phase"}, nil)})
}

// executorPhases counts the cached executors per phase at each scrape.
type executorPhases struct {
	s    *state
	desc *prometheus.Desc
}

func (e *executorPhases) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

func (e *executorPhases) Collect(ch chan<- prometheus.Metric) {
	n := map[corev1.PodPhase]int{}
	for _, p := range e.s.executors.all() {
		n[p.Phase]++
	}
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		count := n[phase]
		if phase == corev1.PodPending {
			count += n[""] // created, not yet given a phase
		}
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, float64(count), string(phase))
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
