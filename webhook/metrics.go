package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sparklet/sparklet/internal/buildinfo"
)

// metrics are the webhook's Prometheus metrics, on a registry of its own.
type metrics struct {
	registry   *prometheus.Registry
	admissions *prometheus.CounterVec
	duration   prometheus.Histogram
	reloads    *prometheus.CounterVec
	// lastReloadOK and lastReloadTime follow Prometheus' own
	// prometheus_config_last_reload_successful and
	// prometheus_config_last_reload_success_timestamp_seconds.
	lastReloadOK   prometheus.Gauge
	lastReloadTime prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_admissions_total",
			Help: "Admission decisions by result (injected, skipped, refused, error) and reason (snake_case, see docs/metrics.md).",
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
		lastReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sparklet_policy_last_reload_successful",
			Help: "1 if the last load of the policy file succeeded, 0 if it failed (the last good policy then stays in force).",
		}),
		lastReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sparklet_policy_last_reload_success_timestamp_seconds",
			Help: "When the policy file last loaded successfully, in Unix seconds.",
		}),
	}
	m.registry.MustRegister(m.admissions, m.duration, m.reloads, m.lastReloadOK, m.lastReloadTime, buildinfo.Collector(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// policyLoaded records one load of the policy file.
func (m *metrics) policyLoaded(ok bool) {
	if !ok {
		m.reloads.WithLabelValues("error").Inc()
		m.lastReloadOK.Set(0)
		return
	}
	m.reloads.WithLabelValues("ok").Inc()
	m.lastReloadOK.Set(1)
	m.lastReloadTime.SetToCurrentTime()
}
