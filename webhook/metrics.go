package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the webhook's Prometheus metrics, on a registry of its own.
type metrics struct {
	registry   *prometheus.Registry
	admissions *prometheus.CounterVec
	duration   prometheus.Histogram
	reloads    *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_admissions_total",
			Help: "Admission decisions by result (injected, skipped, refused, error) and reason.",
		}, []string{"result", "reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sparklet_admission_duration_seconds",
			Help:    "Time to answer one admission request, from body read to response written.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_policy_reloads_total",
			Help: "Policy file loads by result (ok, error). On error the last good policy stays in force.",
		}, []string{"result"}),
	}
	m.registry.MustRegister(m.admissions, m.duration, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
