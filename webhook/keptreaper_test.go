package webhook

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/vocab"
)

// keptPod is a pod of role in ns labelled kept until the given label
// value ("" for no label).
func keptPod(ns, name, role, until string) *corev1.Pod {
	labels := map[string]string{vocab.LabelRole: role}
	if until != "" {
		labels[vocab.LabelKeptUntil] = until
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodFailed}}
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// reaperRun is a keptReaper running on a fake clientset.
type reaperRun struct {
	client *fake.Clientset
	reaper *keptReaper
	logs   *logtest.Hook

	mu      sync.Mutex
	deletes map[string]time.Time // pod name: when the reaper deleted it
}

func startReaper(t *testing.T, namespaces []string, pods ...runtime.Object) *reaperRun {
	t.Helper()
	run := &reaperRun{client: fake.NewClientset(pods...), deletes: map[string]time.Time{}}
	run.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		run.mu.Lock()
		defer run.mu.Unlock()
		if _, again := run.deletes[a.(k8stesting.DeleteAction).GetName()]; !again {
			run.deletes[a.(k8stesting.DeleteAction).GetName()] = time.Now()
		}
		return false, nil, nil
	})
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	run.logs = hook
	run.reaper = newKeptReaper(run.client, namespaces, newReaperMetrics(prometheus.NewRegistry()), log.WithField("component", "keptreaper"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run.reaper.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return run
}

// deleted tells when the reaper deleted name, if it did.
func (r *reaperRun) deleted(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.deletes[name]
	return at, ok
}

// waitGone waits until ns/name is gone from the API.
func (r *reaperRun) waitGone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := r.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s not deleted within %v", ns, name, timeout)
	}
}

// waitCount waits until the reaper has counted want of result.
func waitCount(t *testing.T, m *reaperMetrics, result string, want float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(m.reaped.WithLabelValues(result)) == want, nil
	})
	if err != nil {
		t.Fatalf("%s = %v, want %v", result, testutil.ToFloat64(m.reaped.WithLabelValues(result)), want)
	}
}

// TestKeptReaperDeletesExpiredExecutorsOnly starts the reaper on an
// expired kept executor, one kept for an hour more, one whose label holds
// no time, and a driver pod and a plain executor: only the expired
// executor goes, and the malformed label is logged once.
func TestKeptReaperDeletesExpiredExecutorsOnly(t *testing.T) {
	now := time.Now()
	run := startReaper(t, nil,
		keptPod("team-a", "expired", "executor", unix(now.Add(-5*time.Second))),
		keptPod("team-a", "later", "executor", unix(now.Add(time.Hour))),
		keptPod("team-b", "malformed", "executor", "soon"),
		keptPod("team-b", "zero", "executor", "0"),
		keptPod("team-b", "driver", "driver", unix(now.Add(-5*time.Second))),
		keptPod("team-b", "plain", "executor", ""),
	)
	run.waitGone(t, "team-a", "expired", 5*time.Second)
	// A pod that sneaks past the selector (the fake's watch does not
	// filter by label) is checked again.
	late := keptPod("team-b", "driver-added", "driver", unix(now.Add(-time.Second)))
	if _, err := run.client.CoreV1().Pods("team-b").Create(context.Background(), late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Relabelling the malformed pod with the same bad value logs nothing new.
	bad, _ := run.client.CoreV1().Pods("team-b").Get(context.Background(), "malformed", metav1.GetOptions{})
	bad.Annotations = map[string]string{"touched": "yes"}
	if _, err := run.client.CoreV1().Pods("team-b").Update(context.Background(), bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Then an expired executor created afterwards: once it is gone, the
	// reaper has handled every event before it.
	if _, err := run.client.CoreV1().Pods("team-b").Create(context.Background(), keptPod("team-b", "marker", "executor", unix(now)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run.waitGone(t, "team-b", "marker", 5*time.Second)
	waitCount(t, run.reaper.metrics, "deleted", 2)

	for _, p := range []struct{ ns, name string }{{"team-a", "later"}, {"team-b", "malformed"}, {"team-b", "zero"}, {"team-b", "driver"}, {"team-b", "plain"}, {"team-b", "driver-added"}} {
		if _, err := run.client.CoreV1().Pods(p.ns).Get(context.Background(), p.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s/%s: %v; want it left alone", p.ns, p.name, err)
		}
		if _, ok := run.deleted(p.name); ok {
			t.Errorf("%s/%s: the reaper deleted it", p.ns, p.name)
		}
	}
	if got := testutil.ToFloat64(run.reaper.metrics.reaped.WithLabelValues("malformed")); got != 2 {
		t.Errorf("malformed = %v, want 2 (soon and 0, each once)", got)
	}
	var warned, deletedLog []string
	for _, e := range run.logs.AllEntries() {
		switch {
		case e.Level == logrus.WarnLevel && strings.Contains(e.Message, "holds no Unix time"):
			warned = append(warned, e.Data["pod"].(string))
		case e.Level == logrus.InfoLevel && strings.HasPrefix(e.Message, "deleted a failed executor"):
			deletedLog = append(deletedLog, e.Data["namespace"].(string)+"/"+e.Data["pod"].(string))
		}
	}
	if len(warned) != 2 {
		t.Errorf("warnings for malformed labels on %v, want malformed and zero once each", warned)
	}
	if strings.Join(deletedLog, " ") != "team-a/expired team-b/marker" {
		t.Errorf("deletions logged: %v, want team-a/expired and team-b/marker", deletedLog)
	}
}

// TestKeptReaperWaitsForTheWindow keeps an executor until the next whole
// second but one: it is deleted then, not before, and within a moment.
func TestKeptReaperWaitsForTheWindow(t *testing.T) {
	until := time.Now().Add(2 * time.Second).Truncate(time.Second)
	run := startReaper(t, []string{"team-a"}, keptPod("team-a", "kept", "executor", unix(until)))
	run.waitGone(t, "team-a", "kept", 10*time.Second)
	at, _ := run.deleted("kept")
	late := at.Sub(until)
	t.Logf("deleted %v after the window's end", late.Round(time.Millisecond))
	if late < 0 || late > 500*time.Millisecond {
		t.Errorf("deleted %v after the window's end, want within 500ms and never before", late)
	}
}

// TestKeptReaperOnlyItsNamespaces gives the reaper one namespace: an
// expired executor elsewhere stays.
func TestKeptReaperOnlyItsNamespaces(t *testing.T) {
	past := unix(time.Now().Add(-time.Second))
	run := startReaper(t, []string{"team-a"}, keptPod("team-a", "mine", "executor", past), keptPod("team-c", "theirs", "executor", past))
	run.waitGone(t, "team-a", "mine", 5*time.Second)
	if _, ok := run.deleted("theirs"); ok {
		t.Error("the reaper deleted a pod outside its namespaces")
	}
	for _, a := range run.client.Actions() {
		if a.GetNamespace() == "team-c" {
			t.Errorf("the reaper called team-c: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestKeptReaperGoneAndRetried has the first delete of one pod find it
// gone (another replica or the sidecar deleted it: 404) and of another
// fail once with a server error, which is retried.
func TestKeptReaperGoneAndRetried(t *testing.T) {
	past := unix(time.Now().Add(-time.Second))
	client := fake.NewClientset(keptPod("team-a", "gone", "executor", past), keptPod("team-a", "flaky", "executor", past))
	var mu sync.Mutex
	calls := map[string]int{}
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		mu.Lock()
		defer mu.Unlock()
		calls[name]++
		switch {
		case name == "gone":
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
		case name == "flaky" && calls[name] == 1:
			return true, nil, apierrors.NewInternalError(errTest)
		}
		return false, nil, nil
	})
	log, _ := logtest.NewNullLogger()
	r := newKeptReaper(client, nil, newReaperMetrics(prometheus.NewRegistry()), log.WithField("component", "keptreaper"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("team-a").Get(ctx, "flaky", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && testutil.ToFloat64(r.metrics.reaped.WithLabelValues("gone")) == 1, nil
	})
	if err != nil {
		t.Fatalf("flaky not deleted after a retry, or gone not counted: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["gone"] != 1 || calls["flaky"] != 2 {
		t.Errorf("delete calls %v, want gone once (404 is done) and flaky twice (500 is retried)", calls)
	}
	for result, want := range map[string]float64{"deleted": 1, "gone": 1, "error": 1} {
		if got := testutil.ToFloat64(r.metrics.reaped.WithLabelValues(result)); got != want {
			t.Errorf("%s = %v, want %v", result, got, want)
		}
	}
}

var errTest = errString("injected failure")

type errString string

func (e errString) Error() string { return string(e) }

func TestReaperMetricsPassPromlint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newReaperMetrics(reg)
	for _, r := range []string{"deleted", "gone", "error", "malformed"} {
		m.reaped.WithLabelValues(r).Inc()
	}
	m.late.Observe(0.1)
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
