package webhook

import (
	"crypto/tls"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// gather returns the registry's families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// TestMetricsPassPromlint runs Prometheus' own metric linter over
// everything the webhook's registry exports, after every kind of decision.
func TestMetricsPassPromlint(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, policyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "policy.yaml")
	c, k := selfSigned(t, 1)
	writeAtomic(t, certFile, c)
	writeAtomic(t, keyFile, k)
	writeAtomic(t, policyFile, []byte("limits: {maxExecutors: 5}\n"))
	s, _ := startServer(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, PolicyFile: policyFile, ReloadInterval: time.Hour})
	for _, r := range []string{"injected", "skipped", "refused", "error"} {
		s.metrics.admissions.WithLabelValues(r, reasonOther).Inc()
	}
	s.metrics.duration.Observe(0.001)

	problems, err := promlint.NewWithMetricFamilies(mustGather(t, s.metrics.registry)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	families := gather(t, s.metrics.registry)
	for _, name := range []string{"sparklet_build_info", "sparklet_admissions_total", "sparklet_admission_duration_seconds",
		"sparklet_policy_reloads_total", "sparklet_policy_last_reload_successful", "sparklet_policy_last_reload_success_timestamp_seconds",
		"sparklet_webhook_certificate_expiry_timestamp_seconds"} {
		if families[name] == nil {
			t.Errorf("%s not exported", name)
		}
	}

	// The expiry is the served certificate's NotAfter.
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	got := families["sparklet_webhook_certificate_expiry_timestamp_seconds"].GetMetric()[0].GetGauge().GetValue()
	if want := float64(pair.Leaf.NotAfter.Unix()); got != want {
		t.Errorf("certificate expiry %v, want %v", got, want)
	}
}

func mustGather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestNoCertificateNoExpiry: before a certificate loads there is no
// expiry to report, rather than a zero that reads as long expired.
func TestNoCertificateNoExpiry(t *testing.T) {
	s := NewServer(Config{}, nil)
	if n := testutil.CollectAndCount(s.metrics.registry, "sparklet_webhook_certificate_expiry_timestamp_seconds"); n != 0 {
		t.Errorf("%d expiry samples without a certificate", n)
	}
}

func TestPolicyReloadGauges(t *testing.T) {
	m := newMetrics()
	m.policyLoaded(true)
	ok, at := testutil.ToFloat64(m.lastReloadOK), testutil.ToFloat64(m.lastReloadTime)
	if ok != 1 || time.Since(time.Unix(int64(at), 0)) > time.Minute {
		t.Errorf("after a good load: successful %v, timestamp %v", ok, at)
	}
	m.policyLoaded(false)
	if testutil.ToFloat64(m.lastReloadOK) != 0 || testutil.ToFloat64(m.lastReloadTime) != at {
		t.Errorf("after a bad load: successful %v, timestamp %v (want 0 and the last good %v)",
			testutil.ToFloat64(m.lastReloadOK), testutil.ToFloat64(m.lastReloadTime), at)
	}
	if got := testutil.ToFloat64(m.reloads.WithLabelValues("error")); got != 1 {
		t.Errorf("reloads{result=error} = %v", got)
	}
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestReasonsAreFixedSnakeCase: the reason label never carries free text.
func TestReasonsAreFixedSnakeCase(t *testing.T) {
	pol := policy.Default("dev").For("ns")
	skip := func(pod *corev1.Pod) string {
		res, err := patches.Driver(pod, patches.Input{Namespace: "ns", Policy: pol, Version: "dev"})
		if err != nil || res.Skipped == nil {
			t.Fatalf("want a skip, got %+v, %v", res, err)
		}
		return res.Skipped.Reason
	}
	if got := skip(&corev1.Pod{}); got != patches.SkipNotDriver {
		t.Errorf("unlabelled pod: reason %q", got)
	}
	optedOut := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{vocab.LabelRole: "driver"},
		Annotations: map[string]string{vocab.AnnotationInject: "false"}}}
	if got := skip(optedOut); got != patches.SkipOptedOut {
		t.Errorf("opted-out pod: reason %q", got)
	}
	for _, r := range []string{patches.SkipNotDriver, patches.SkipOptedOut, patches.SkipLaunchedBySparkOperator, patches.SkipSparkSubmitClusterMode} {
		if !snakeCase.MatchString(r) {
			t.Errorf("skip reason %q is not snake_case", r)
		}
	}
	for in, want := range map[string]string{"image-not-allowed": "image_not_allowed", "over-limit": "over_limit",
		"host-network": "host_network", "Free text: no": reasonOther, "": reasonOther, "-x": reasonOther} {
		if got := refusalReason(in); got != want {
			t.Errorf("refusalReason(%q) = %q, want %q", in, got, want)
		}
	}
}
