package realspark

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/vocab"
)

// sleepy is a run of testdata/sleepy.py: tasks tasks of sleepMS each, then
// idle seconds with no work.
type sleepy struct {
	tasks, sleepMS, idle int
	conf                 string // Spark properties, spark-defaults format
	// files go into /opt/job beside the script.
	files map[string]string
	// script is the testdata script run with the same arguments in
	// sleepy.py's place, when set.
	script string
}

// sleepyDriver is the driver pod's name.
const sleepyDriver = "sleepy"

// start creates the job's ConfigMap and its plain driver pod in ns, with
// the image of dist, and returns the pod as admitted.
func (j sleepy) start(t *testing.T, ns string, d spark.Dist) *corev1.Pod {
	t.Helper()
	name := "sleepy.py"
	if j.script != "" {
		name = j.script
	}
	script, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sleepy-job"}, Data: map[string]string{name: string(script)}}
	for name, text := range j.files {
		cm.Data[name] = text
	}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        sleepyDriver,
			Labels:      map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{vocab.AnnotationSparkConf: j.conf},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:  "spark",
				Image: "apache/spark:" + d.Version,
				Args: []string{"driver", "local:///opt/job/" + name,
					strconv.Itoa(j.tasks), strconv.Itoa(j.sleepMS), strconv.Itoa(j.idle)},
				VolumeMounts: []corev1.VolumeMount{{Name: "job", MountPath: "/opt/job"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				},
			}},
			Volumes: []corev1.Volume{{Name: "job", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}},
		},
	}
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Pods(ns).Delete(context.Background(), sleepyDriver, metav1.DeleteOptions{})
	})
	return created
}

var sumLine = regexp.MustCompile(`sleepy: sum of ids is (\d+)`)

// checkSum checks the sum the job printed: that of 0..tasks-1, which only
// every task's row gives.
func (j sleepy) checkSum(t *testing.T, driverLog string) {
	t.Helper()
	m := sumLine.FindStringSubmatch(driverLog)
	if m == nil {
		t.Fatalf("no %q line in the driver's log", "sleepy: sum of ids is")
	}
	if want := strconv.Itoa(j.tasks * (j.tasks - 1) / 2); m[1] != want {
		t.Errorf("sum of ids %s, want %s", m[1], want)
	}
}

// execTracker follows a namespace's executor pods through an informer,
// which survives API server restarts, and keeps what the failure tests
// count: how many were alive at once, duplicates of one spark-exec-id
// alive at once, and when each started to go.
type execTracker struct {
	mu       sync.Mutex
	alive    map[string]string // pod name → spark-exec-id, while alive
	seen     map[string]*corev1.Pod
	maxAlive int
	dupes    []string
	going    map[string]time.Time // pod name → first seen deleting or gone
	running  map[string]time.Time // pod name → first seen Running
	// pending holds the executors not yet running, by resource profile id;
	// mostPending is the most pending at once, by resource profile id, and
	// of every profile under allProfiles.
	pending     map[string]map[string]bool
	mostPending map[string]int
}

func trackExecutors(t *testing.T, ns string) *execTracker {
	t.Helper()
	tr := &execTracker{alive: map[string]string{}, seen: map[string]*corev1.Pod{}, going: map[string]time.Time{}, running: map[string]time.Time{},
		pending: map[string]map[string]bool{}, mostPending: map[string]int{}}
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = vocab.LabelRole + "=executor" }))
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

func (tr *execTracker) observe(obj any, gone bool) {
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
func (tr *execTracker) countPending(p *corev1.Pod, gone bool) {
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
	tr.mostPending[allProfiles] = max(tr.mostPending[allProfiles], all)
}

// allProfiles keys the pending executors of every resource profile.
const allProfiles = "*"

// mostPendingAtOnce returns the most executors pending at once, by
// resource profile id, and of every profile under allProfiles.
func (tr *execTracker) mostPendingAtOnce() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.mostPending)
}

// counts returns the executors alive now, the most alive at once, how many
// were ever seen and how many were deleted.
func (tr *execTracker) counts() (alive, maxAlive, seen, deleted int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.alive), tr.maxAlive, len(tr.seen), len(tr.going)
}

// pods returns the last version of every executor seen.
func (tr *execTracker) pods() []*corev1.Pod {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range tr.seen {
		out = append(out, p)
	}
	return out
}

// nthRunning returns when the n-th executor was first seen Running.
func (tr *execTracker) nthRunning(n int) (time.Time, bool) {
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

// checkNoDuplicates fails the test if two executors of one spark-exec-id
// were ever alive at once.
func (tr *execTracker) checkNoDuplicates(t *testing.T) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, d := range tr.dupes {
		t.Errorf("duplicate executors alive at once: %s", d)
	}
}

// run starts the job in a namespace of the test's own, tracking its
// executors, and returns once the driver's Spark container runs.
func (j sleepy) run(t *testing.T, d spark.Dist) (ns string, execs *execTracker, appID string) {
	t.Helper()
	ns = namespace(t)
	execs = trackExecutors(t, ns)
	j.start(t, ns, d)
	running := waitPod(t, ns, sleepyDriver, "ran its driver container", 3*time.Minute, containerRunning("spark"))
	return ns, execs, running.Labels[vocab.LabelAppID]
}

// waitFor polls cond, about the job in ns, until it holds or timeout passes.
func waitFor(t *testing.T, ns, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("never %s within %v\n%s", what, timeout, driverLogTail(ns, sleepyDriver))
	}
}

// failureDists are the versions the failure tests run on: the oldest and
// the newest pinned line.
func failureDists(t *testing.T) []spark.Dist {
	t.Helper()
	if len(dists) == 0 {
		t.Fatal("no pinned Spark versions")
	}
	if len(dists) == 1 {
		return dists
	}
	return []spark.Dist{dists[0], dists[len(dists)-1]}
}
