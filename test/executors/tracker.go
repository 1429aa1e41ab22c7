package executors

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/vocab"
)

// Tracker follows a namespace's executor pods through an informer, which
// survives API server restarts, and keeps what the failure tests count:
// how many were alive at once, duplicates of one spark-exec-id alive at
// once, and when each started to go.
type Tracker struct {
	mu       sync.Mutex
	alive    map[string]string // pod name → spark-exec-id, while alive
	seen     map[string]*corev1.Pod
	maxAlive int
	dupes    []string
	going    map[string]time.Time // pod name → first seen deleting or gone
	running  map[string]time.Time // pod name → first seen Running
	// pending holds the executors not yet running, by resource profile id;
	// mostPending is the most pending at once, by resource profile id, and
	// of every profile under AllProfiles.
	pending     map[string]map[string]bool
	mostPending map[string]int
}

// Track follows the executor pods of ns until t ends; labels (selector
// requirements such as "spark-app-selector=ID") narrow them to one
// application.
func Track(t testing.TB, client kubernetes.Interface, ns string, labels ...string) *Tracker {
	t.Helper()
	selector := strings.Join(append([]string{vocab.LabelRole + "=executor"}, labels...), ",")
	tr := &Tracker{alive: map[string]string{}, seen: map[string]*corev1.Pod{}, going: map[string]time.Time{}, running: map[string]time.Time{},
		pending: map[string]map[string]bool{}, mostPending: map[string]int{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.observe(obj, false) },
		UpdateFunc: func(_, obj any) { tr.observe(obj, false) },
		DeleteFunc: func(obj any) { tr.observe(obj, true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("executor informer never synced")
	}
	return tr
}

func (tr *Tracker) observe(obj any, gone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen[p.Name] = p
	tr.countPending(p, gone)
	if _, ok := tr.running[p.Name]; !ok && !gone && p.Status.Phase == corev1.PodRunning {
		tr.running[p.Name] = time.Now()
	}
	ending := gone || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if ending {
		delete(tr.alive, p.Name)
		if _, ok := tr.going[p.Name]; !ok && (gone || p.DeletionTimestamp != nil) {
			tr.going[p.Name] = time.Now()
		}
		return
	}
	id := p.Labels[vocab.LabelExecID]
	if _, ok := tr.alive[p.Name]; !ok {
		for other, otherID := range tr.alive {
			if otherID == id {
				tr.dupes = append(tr.dupes, fmt.Sprintf("%s and %s (spark-exec-id %s)", other, p.Name, id))
			}
		}
	}
	tr.alive[p.Name] = id
	tr.maxAlive = max(tr.maxAlive, len(tr.alive))
}

// countPending counts p as pending under its resource profile while it
// is neither running nor ending.
func (tr *Tracker) countPending(p *corev1.Pod, gone bool) {
	rp := p.Labels[vocab.LabelResourceProfileID]
	if tr.pending[rp] == nil {
		tr.pending[rp] = map[string]bool{}
	}
	if gone || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
		delete(tr.pending[rp], p.Name)
		return
	}
	tr.pending[rp][p.Name] = true
	tr.mostPending[rp] = max(tr.mostPending[rp], len(tr.pending[rp]))
	all := 0
	for _, names := range tr.pending {
		all += len(names)
	}
	tr.mostPending[AllProfiles] = max(tr.mostPending[AllProfiles], all)
}

// AllProfiles keys the pending executors of every resource profile.
const AllProfiles = "*"

// MostPendingAtOnce returns the most executors pending at once, by
// resource profile id, and of every profile under AllProfiles.
func (tr *Tracker) MostPendingAtOnce() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.mostPending)
}

// Counts returns the executors alive now, the most alive at once, how many
// were ever seen and how many were deleted.
func (tr *Tracker) Counts() (alive, maxAlive, seen, deleted int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.alive), tr.maxAlive, len(tr.seen), len(tr.going)
}

// Pods returns the last version of every executor seen.
func (tr *Tracker) Pods() []*corev1.Pod {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range tr.seen {
		out = append(out, p)
	}
	return out
}

// RunningExecutor returns a running executor pod seen by the tracker.
func (tr *Tracker) RunningExecutor() (*corev1.Pod, bool) {
	for _, p := range tr.Pods() {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Labels[vocab.LabelRole] == "executor" {
			return p, true
		}
	}
	return nil, false
}

// NthRunning returns when the n-th executor was first seen Running.
func (tr *Tracker) NthRunning(n int) (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.running) < n {
		return time.Time{}, false
	}
	var latest time.Time
	for _, at := range tr.running {
		if at.After(latest) {
			latest = at
		}
	}
	return latest, true
}

// RanEver reports whether the executor was ever seen Running.
func (tr *Tracker) RanEver(name string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, ok := tr.running[name]
	return ok
}

// CheckNoDuplicates fails t if two executors of one spark-exec-id were
// ever alive at once.
func (tr *Tracker) CheckNoDuplicates(t testing.TB) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, d := range tr.dupes {
		t.Errorf("duplicate executors alive at once: %s", d)
	}
}
