package sidecar

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func stateWith(t *testing.T, phases ...corev1.PodPhase) *state {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	transform := podTransform(false)
	for i, ph := range phases {
		p, err := transform(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "exec-" + string(rune('a'+i))}, Status: corev1.PodStatus{Phase: ph}})
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return &state{executors: &source{store: idx, namespace: "ns", keep: func(*cachedPod) bool { return true }}}
}

// TestExecutorsByPhase: one gauge with a phase label, every phase present
// (zero included) so that a dashboard's sum never misses a series.
func TestExecutorsByPhase(t *testing.T) {
	m := newMetrics()
	m.watchPhases(stateWith(t, corev1.PodRunning, corev1.PodRunning, "", corev1.PodPending, corev1.PodFailed))
	want := `# HELP sparklet_sidecar_executors Executors of this application in the cache, by phase (Pending, Running, Succeeded, Failed, Unknown).
# TYPE sparklet_sidecar_executors gauge
sparklet_sidecar_executors{phase="Failed"} 1
sparklet_sidecar_executors{phase="Pending"} 2
sparklet_sidecar_executors{phase="Running"} 2
sparklet_sidecar_executors{phase="Succeeded"} 0
sparklet_sidecar_executors{phase="Unknown"} 0
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "sparklet_sidecar_executors"); err != nil {
		t.Error(err)
	}
}

// TestMetricsPassPromlint runs Prometheus' metric linter over everything
// the sidecar exports.
func TestMetricsPassPromlint(t *testing.T) {
	m := newMetrics()
	m.watchPhases(stateWith(t, corev1.PodRunning))
	m.jvmRequests.WithLabelValues("list", "pods", "200").Inc()
	m.apiRequests.WithLabelValues("POST", "201").Inc()
	m.createLatency.Observe(0.01)
	m.quotaShortCircuits.Inc()
	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"sparklet_build_info", "sparklet_sidecar_executors"} {
		if !names[n] {
			t.Errorf("%s not exported", n)
		}
	}
	if names["sparklet_sidecar_executors_by_phase"] {
		t.Error("the label is in a metric's name: sparklet_sidecar_executors_by_phase")
	}
}
