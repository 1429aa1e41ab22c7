package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
)

// Driver is one emulated Spark driver in client mode.
type Driver struct {
	cfg        Config
	log        *logrus.Entry
	base       *url.URL
	c          *client
	st         *counters
	app        selector // spark-app-selector=<id>,spark-role=executor
	confMap    string
	localDirID string
	driverPod  *corev1.Pod

	mu       sync.Mutex
	snap     map[int]snapEntry // the latest snapshot, by executor id
	newly    map[int]time.Time // newlyCreatedExecutors: created, not yet seen
	deleted  map[int]bool      // _deletedExecutorIds: excess pods deleted
	released map[int]bool      // finished pods the lifecycle manager removed
	target   int
	nextID   int // EXECUTOR_ID_COUNTER
	rounds   int // allocator rounds run, for tests
	setAt    time.Time
	series   []Point
	running  int
	changed  chan struct{} // closed and replaced on every snapshot change
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	watchErr error
}

type snapEntry struct {
	pod     *corev1.Pod
	deleted bool // seen in a DELETED watch event
}

// Point is one sample of the time series: seconds since SetTarget and the
// executors Running in the snapshot then.
type Point struct {
	Seconds float64 `json:"s"`
	Running int     `json:"running"`
}

// New checks cfg and returns a driver that has made no call yet.
func New(cfg Config) (*Driver, error) {
	cfg.defaults()
	base, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("emulator config: %w", err)
	}
	st := &counters{requests: map[string]int{}}
	d := &Driver{
		cfg: cfg, log: cfg.Log.WithFields(logrus.Fields{"mode": string(cfg.Mode), "app": cfg.AppID}),
		base: base, st: st, c: newClient(&cfg, base, st),
		app:     selector{}.with(labelApp, cfg.AppID).with(labelRole, roleExecutor),
		confMap: configMapName(), localDirID: uniqueID(),
		snap: map[int]snapEntry{}, newly: map[int]time.Time{}, deleted: map[int]bool{}, released: map[int]bool{},
		changed: make(chan struct{}),
	}
	d.c.cfg = &d.cfg
	return d, nil
}

// Config returns the effective configuration.
func (d *Driver) Config() Config { return d.cfg }

// ConfigMapName is the executor ConfigMap's name.
func (d *Driver) ConfigMapName() string { return d.confMap }

// Start makes SparkContext's start-up calls in client mode and starts the
// watch, the polling, the allocator and the lifecycle manager, which run
// until Stop or until ctx ends.
func (d *Driver) Start(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("emulator: Start called twice")
	}
	d.started = true
	d.mu.Unlock()

	// 1. ExecutorPodsAllocator's constructor GETs the driver pod; fabric8's
	// get() returns null on 404 and Spark throws "No pod was found named
	// ..." (K/scheduler/cluster/k8s/ExecutorPodsAllocator.scala driverPod).
	r, err := d.c.do(ctx, call{verb: "get", resource: "pods", method: http.MethodGet, path: "/pods/" + d.cfg.DriverPodName})
	if err != nil {
		return fmt.Errorf("get driver pod: %w", err)
	}
	if r.code == http.StatusNotFound {
		//lint:ignore ST1005 Spark's own wording
		return fmt.Errorf("No pod was found named %s in the cluster in the namespace %s (this was supposed to be the driver pod.).", d.cfg.DriverPodName, d.cfg.Namespace)
	}
	if r.code != http.StatusOK {
		return fmt.Errorf("get driver pod: HTTP %d: %s", r.code, strings.TrimSpace(string(r.body)))
	}
	d.driverPod = &corev1.Pod{}
	if err := json.Unmarshal(r.body, d.driverPod); err != nil {
		return fmt.Errorf("decode driver pod: %w", err)
	}
	if d.driverPod.APIVersion == "" || d.driverPod.Kind == "" || d.driverPod.UID == "" {
		// Spark copies them into every owner reference; without them the
		// API server refuses the executor pods.
		d.log.Warn("driver pod answer lacks apiVersion, kind or uid; owner references will be invalid")
	}

	// From here the order is KubernetesClusterSchedulerBackend.start
	// (K/scheduler/cluster/k8s/KubernetesClusterSchedulerBackend.scala,
	// 3.5.4 and 4.0.0): podAllocator.start, lifecycle manager, watch,
	// polling, then the executor ConfigMap.
	// 2. ExecutorPodsAllocator.start: waitUntilReady, errors only logged.
	if err := d.waitDriverReady(ctx); err != nil {
		d.log.WithError(err).Warn("waiting for the driver pod to be ready")
	}
	loops, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	d.mu.Lock()
	d.cancel = func() { stop(); cancel() }
	d.mu.Unlock()
	d.spawn(func() { d.every(loops, d.cfg.BatchDelay, 0, d.allocate) })
	d.spawn(func() { d.every(loops, d.cfg.EventInterval, 0, d.lifecycle) })

	// 3. ExecutorPodsWatchSnapshotSource.start: a synchronous watch of the
	// app's executors, no resourceVersion.
	if d.cfg.EnableWatch {
		w := &watcher{d: d, resource: "pods", opts: listOpts{label: d.app.String()}, onEvent: d.onWatchEvent}
		if d.cfg.Mode == Spark35 {
			w.ping = 30 * time.Second
		}
		s, err := w.start(loops)
		if err != nil {
			d.cancel()
			d.wg.Wait()
			return fmt.Errorf("executor watch: %w", err)
		}
		d.spawn(func() {
			err := w.run(loops, s)
			d.mu.Lock()
			d.watchErr = err
			d.mu.Unlock()
			if errors.Is(err, errGone) {
				// ExecutorPodsWatcher.onClose only logs; nothing
				// re-creates the watch.
				d.log.Warn("executor watch closed with 410 Gone; only the polling keeps the snapshot fresh")
			}
		})
	}
	// 4. ExecutorPodsPollingSnapshotSource.start: scheduleWithFixedDelay,
	// first run after one interval.
	if d.cfg.EnablePolling {
		d.spawn(func() { d.every(loops, d.cfg.PollInterval, d.cfg.PollInterval, d.poll) })
	}
	// 5. setUpExecutorConfigMap: not wrapped in try, so a failure aborts
	// start-up.
	body, _ := json.Marshal(d.executorConfigMap())
	r, err = d.c.do(ctx, call{verb: "create", resource: "configmaps", method: http.MethodPost, path: "/configmaps", body: body, ctype: d.c.jsonType()})
	if err == nil && r.code != http.StatusCreated && r.code != http.StatusOK {
		err = &statusError{"POST", "configmaps", r.code, string(r.body)}
	}
	if err != nil {
		d.cancel()
		d.wg.Wait()
		return fmt.Errorf("create executor ConfigMap: %w", err)
	}
	d.log.WithField("configMap", d.confMap).Info("driver started")
	return nil
}

func (d *Driver) spawn(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// every runs f with a fixed delay between runs (ScheduledExecutorService
// scheduleWithFixedDelay), the first after initial.
func (d *Driver) every(ctx context.Context, delay, initial time.Duration, f func(context.Context)) {
	if !sleep(ctx, initial) {
		return
	}
	for ctx.Err() == nil {
		f(ctx)
		if !sleep(ctx, delay) {
			return
		}
	}
}

// waitDriverReady is fabric8's waitUntilReady(readinessTimeout) on the
// driver pod: an informer that LISTs with fieldSelector=metadata.name=<pod>
// and WATCHes from the list's resourceVersion with timeoutSeconds=600
// (Reflector: MIN_TIMEOUT 5 min, times 2), closed once the pod is Ready or
// the timeout passes (F/BaseOperation.java waitUntilCondition,
// informOnCondition; F/../informers/impl/cache/Reflector.java).
func (d *Driver) waitDriverReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReadinessTimeout)
	defer cancel()
	field := "metadata.name=" + d.cfg.DriverPodName
	list, err := d.listPods(ctx, listOpts{field: field})
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	var once sync.Once
	check := func(p *corev1.Pod) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				once.Do(func() { close(ready) })
			}
		}
	}
	for i := range list.Items {
		check(&list.Items[i])
	}
	w := &watcher{d: d, resource: "pods", opts: listOpts{field: field, timeoutSeconds: 600}, rv: list.ResourceVersion,
		onEvent: func(_ string, raw []byte) {
			var p corev1.Pod
			if json.Unmarshal(raw, &p) == nil {
				check(&p)
			}
		}}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	// The informer's watch is an ordinary fabric8 watch.
	s, err := w.start(wctx)
	if err != nil {
		return fmt.Errorf("driver pod watch: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.read(wctx, s)
	}()
	select {
	case <-ready:
	case <-ctx.Done():
	}
	wcancel()
	s.close()
	<-done
	select {
	case <-ready:
		return nil
	default:
		return fmt.Errorf("driver pod %s not ready within %s", d.cfg.DriverPodName, d.cfg.ReadinessTimeout)
	}
}

// onWatchEvent is ExecutorPodsWatcher.eventReceived: every action goes
// through updatePod; DELETED marks the pod deleted (ExecutorPodsSnapshot.withUpdate).
func (d *Driver) onWatchEvent(typ string, raw []byte) {
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		d.log.WithError(err).Warn("watch event object is not a pod")
		return
	}
	id, err := strconv.Atoi(p.Labels[labelExecID])
	if err != nil {
		return
	}
	d.mu.Lock()
	d.snap[id] = snapEntry{pod: &p, deleted: typ == "DELETED"}
	d.changedLocked()
	d.mu.Unlock()
}

// poll is ExecutorPodsPollingSnapshotSource.PollRunnable: a LIST that
// replaces the whole snapshot (replaceSnapshot).
func (d *Driver) poll(ctx context.Context) {
	sel := d.app.without(labelInactive, "true")
	list, err := d.listPods(ctx, listOpts{label: sel.String()})
	if err != nil {
		d.log.WithError(err).Warn("polling LIST failed")
		return
	}
	snap := map[int]snapEntry{}
	for i := range list.Items {
		p := &list.Items[i]
		if id, err := strconv.Atoi(p.Labels[labelExecID]); err == nil {
			snap[id] = snapEntry{pod: p}
		}
	}
	d.mu.Lock()
	d.snap = snap
	d.changedLocked()
	d.mu.Unlock()
}

// changedLocked follows a new snapshot: executors seen in it are no longer
// "newly created" (onNewSnapshots: newlyCreatedExecutors --= snapshot
// keys), the time series gets a point, and waiters wake.
func (d *Driver) changedLocked() {
	for id := range d.newly {
		if _, ok := d.snap[id]; ok {
			delete(d.newly, id)
		}
	}
	running := 0
	for _, e := range d.snap {
		if stateOf(e.pod, e.deleted) == stateRunning {
			running++
		}
	}
	if running != d.running && !d.setAt.IsZero() {
		d.series = append(d.series, Point{Seconds: time.Since(d.setAt).Seconds(), Running: running})
	}
	d.running = running
	close(d.changed)
	d.changed = make(chan struct{})
}

// SetTarget sets the total executors wanted, as spark.executor.instances
// or dynamic allocation's requestTotalExecutors does; the time series
// restarts.
func (d *Driver) SetTarget(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.target = max(n, 0)
	d.setAt = time.Now()
	d.series = []Point{{Seconds: 0, Running: d.running}}
	d.log.WithField("target", d.target).Info("executor target set")
}

// allocate is one ExecutorPodsAllocator.onNewSnapshots round
// (K/scheduler/cluster/k8s/ExecutorPodsAllocator.scala, 3.5.4 and 4.0.0),
// run every batch delay by the snapshot store's subscriber.
func (d *Driver) allocate(ctx context.Context) {
	now := time.Now()
	d.mu.Lock()
	d.rounds++
	if d.stopped {
		d.mu.Unlock()
		return
	}
	// Newly created pods not seen within the executor timeout are
	// deleted by label.
	// The snapshots since the last round include the current one; an
	// executor in it is no longer newly created.
	var timedOut []int
	for id, t := range d.newly {
		if _, seen := d.snap[id]; seen {
			delete(d.newly, id)
		} else if now.Sub(t) > d.cfg.ExecutorTimeout {
			timedOut = append(timedOut, id)
			delete(d.newly, id)
		}
	}
	for id := range d.deleted {
		if _, ok := d.snap[id]; !ok {
			delete(d.deleted, id)
		}
	}
	running := 0
	var pending []int
	for id, e := range d.snap {
		switch stateOf(e.pod, e.deleted) {
		case stateRunning:
			running++
		case statePending:
			if !d.deleted[id] {
				pending = append(pending, id)
			}
		}
	}
	podCount := running + len(pending) + len(d.newly)
	var newlyToDelete, pendingToDelete []int
	toCreate := 0
	switch {
	case podCount > d.target:
		// Downscale: newly created and pending pods older than the idle
		// timeout, newest first.
		excess := podCount - d.target
		for _, id := range slices.Backward(slices.Sorted(maps.Keys(d.newly))) {
			if len(newlyToDelete) < excess && now.Sub(d.newly[id]) > d.cfg.IdleTimeout {
				newlyToDelete = append(newlyToDelete, id)
			}
		}
		slices.Sort(pending)
		for _, id := range slices.Backward(pending) {
			created := d.snap[id].pod.CreationTimestamp.Time
			if len(newlyToDelete)+len(pendingToDelete) < excess && now.Sub(created) > d.cfg.IdleTimeout {
				pendingToDelete = append(pendingToDelete, id)
			}
		}
	case podCount < d.target && len(d.newly) == 0:
		// A new batch only once every newly created pod was seen.
		toCreate = min(d.target-podCount, d.cfg.BatchSize)
	}
	d.mu.Unlock()

	if len(timedOut) > 0 {
		d.log.WithField("ids", timedOut).Warn("executors not seen within the executor timeout; deleting them")
		sel := d.app.withIn(labelExecID, ids(timedOut)...)
		d.deleteCollection(ctx, "pods", listOpts{label: sel.String()})
	}
	if toDelete := append(slices.Clone(newlyToDelete), pendingToDelete...); len(toDelete) > 0 {
		sel := d.app.withIn(labelExecID, ids(toDelete)...)
		if d.deleteCollection(ctx, "pods", listOpts{field: "status.phase=Pending", label: sel.String()}) == nil {
			d.mu.Lock()
			for _, id := range toDelete {
				delete(d.newly, id)
				d.deleted[id] = true
			}
			d.mu.Unlock()
		}
	}
	if toCreate > 0 {
		d.requestNewExecutors(ctx, toCreate)
	}
}

// requestNewExecutors: the PVC LIST of getReusablePVCs (errors only
// logged), then one POST per executor; the first failure abandons the rest
// of the batch and its executor id stays used. Spark retries on the next
// round, about every batch delay, without backoff.
func (d *Driver) requestNewExecutors(ctx context.Context, n int) {
	sel := selector{}.with(labelApp, d.cfg.AppID)
	if _, err := d.c.do(ctx, call{verb: "list", resource: "persistentvolumeclaims", method: http.MethodGet,
		path: "/persistentvolumeclaims", query: listOpts{label: sel.String()}.String()}); err != nil {
		d.log.WithError(err).Warn("listing reusable PVCs")
	}
	for range n {
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			return
		}
		d.nextID++
		id := d.nextID
		d.mu.Unlock()
		if err := d.createExecutor(ctx, id); err != nil {
			d.st.mu.Lock()
			d.st.createErrors++
			if d.st.firstCreateError == "" {
				d.st.firstCreateError = err.Error()
			}
			d.st.lastCreateError = err.Error()
			d.st.mu.Unlock()
			d.log.WithError(err).WithField("executor", id).Warn("executor pod creation failed")
			return
		}
	}
}

func (d *Driver) createExecutor(ctx context.Context, id int) error {
	pod := d.executorPod(id)
	body, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	r, err := d.c.do(ctx, call{verb: "create", resource: "pods", method: http.MethodPost, path: "/pods", body: body, ctype: d.c.jsonType()})
	if err == nil && r.code != http.StatusCreated && r.code != http.StatusOK {
		err = &statusError{"POST", "pods", r.code, string(r.body)}
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", pod.Name, err)
	}
	// newlyCreatedExecutors gets the id after the create returns.
	d.mu.Lock()
	d.newly[id] = time.Now()
	d.mu.Unlock()
	d.st.add(&d.st.created, 1)
	return nil
}

// lifecycle is ExecutorPodsLifecycleManager.onNewSnapshots with
// deleteOnTermination (the default): a Failed or Succeeded executor is
// removed once (removedExecutorsCache). Spark 3.5 deletes it by name;
// Spark 4.0 GETs it first and deletes it only if it still exists
// (removeExecutorFromK8s, K/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala).
func (d *Driver) lifecycle(ctx context.Context) {
	d.mu.Lock()
	var names []string
	for id, e := range d.snap {
		if s := stateOf(e.pod, e.deleted); (s == stateFailed || s == stateSucceeded) && !d.released[id] {
			d.released[id] = true
			names = append(names, e.pod.Name)
		}
	}
	d.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		if d.cfg.Mode == Spark40 {
			r, err := d.c.do(ctx, call{verb: "get", resource: "pods", method: http.MethodGet, path: "/pods/" + name})
			if err != nil || r.code == http.StatusNotFound {
				continue
			}
		}
		r, err := d.c.do(ctx, call{verb: "delete", resource: "pods", method: http.MethodDelete, path: "/pods/" + name, body: deleteBody, ctype: "application/json"})
		if err == nil && r.code >= 300 && r.code != http.StatusNotFound {
			err = &statusError{"DELETE", "pods/" + name, r.code, string(r.body)}
		}
		if err != nil {
			d.log.WithError(err).Warn("deleting a finished executor")
		}
	}
}

// deleteCollection is fabric8's deleteAll on a filtered operation: one
// DELETE on the collection URL with the DeleteOptions body
// (F/BaseOperation.java delete; F/OperationSupport.java handleDelete).
func (d *Driver) deleteCollection(ctx context.Context, resource string, o listOpts) error {
	r, err := d.c.do(ctx, call{verb: "deletecollection", resource: resource, method: http.MethodDelete,
		path: "/" + resource, query: o.String(), body: deleteBody, ctype: "application/json"})
	if err == nil && r.code >= 300 {
		err = &statusError{"DELETE", resource, r.code, string(r.body)}
	}
	if err != nil {
		d.log.WithError(err).WithField("resource", resource).Warn("collection delete failed")
	}
	return err
}

// KillExecutors is CoarseGrainedSchedulerBackend.killExecutors with the
// target lowered by the ids, then KubernetesClusterSchedulerBackend.doKillExecutors:
// after the delete grace period, LIST the Running ones among them; if any,
// LIST again (for the log line) and DELETE that collection.
func (d *Driver) KillExecutors(ctx context.Context, execIDs []int) error {
	d.mu.Lock()
	d.target = max(d.target-len(execIDs), 0)
	d.mu.Unlock()
	if !sleep(ctx, d.cfg.DeleteGracePeriod) {
		return ctx.Err()
	}
	sel := d.app.withIn(labelExecID, ids(execIDs)...)
	o := listOpts{field: "status.phase=Running", label: sel.String()}
	l, err := d.listPods(ctx, o)
	if err != nil || len(l.Items) == 0 {
		return err
	}
	if _, err := d.listPods(ctx, o); err != nil {
		return err
	}
	return d.deleteCollection(ctx, "pods", o)
}

// Decommission is KubernetesClusterSchedulerBackend.labelDecommissioningExecs
// (with spark.kubernetes.executor.decommissionLabel set): LIST the
// executors, then per listed pod an edit, which is a JSON patch computed by
// fabric8's diff without a GET, because the item came from the list. The
// diff adds the label and, because handlePatch nulls the base copy's
// resourceVersion, /metadata/resourceVersion (F/HasMetadataOperation.java
// edit, F/OperationSupport.java handlePatch).
func (d *Driver) Decommission(ctx context.Context, execIDs []int, label, value string) error {
	sel := d.app.withIn(labelExecID, ids(execIDs)...)
	list, err := d.listPods(ctx, listOpts{label: sel.String()})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range list.Items {
		body, err := json.Marshal(decommissionPatch(&p, label, value))
		if err != nil {
			return err
		}
		r, err := d.c.do(ctx, call{verb: "patch", resource: "pods", method: http.MethodPatch, path: "/pods/" + p.Name, body: body, ctype: "application/json-patch+json"})
		if err == nil && r.code != http.StatusOK {
			err = &statusError{"PATCH", "pods/" + p.Name, r.code, string(r.body)}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// decommissionPatch is the diff zjsonpatch produces: fields in the pod's
// serialization order, so the label before the resourceVersion.
func decommissionPatch(p *corev1.Pod, label, value string) []patchOp {
	var ops []patchOp
	if old, ok := p.Labels[label]; !ok {
		ops = append(ops, patchOp{"add", "/metadata/labels/" + pointerEscape(label), value})
	} else if old != value {
		ops = append(ops, patchOp{"replace", "/metadata/labels/" + pointerEscape(label), value})
	}
	if p.ResourceVersion != "" {
		ops = append(ops, patchOp{"add", "/metadata/resourceVersion", p.ResourceVersion})
	}
	return ops
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// listPods is one pod LIST as fabric8 makes it, decoded; an answer other
// than 200 is a statusError.
func (d *Driver) listPods(ctx context.Context, o listOpts) (*corev1.PodList, error) {
	r, err := d.c.do(ctx, call{verb: "list", resource: "pods", method: http.MethodGet, path: "/pods", query: o.String()})
	if err != nil {
		return nil, err
	}
	if r.code != http.StatusOK {
		return nil, &statusError{"GET", "pods", r.code, string(r.body)}
	}
	var l corev1.PodList
	if err := json.Unmarshal(r.body, &l); err != nil {
		return nil, fmt.Errorf("decode pod list: %w", err)
	}
	return &l, nil
}

// Stop is KubernetesClusterSchedulerBackend.stop: the snapshot store, the
// watch and the polling stop, then four collection DELETEs, each issued
// even when nothing was created and each failure only logged: services and
// PVCs by app label, then ExecutorPodsAllocator.stop's pods and the
// executor ConfigMaps by app and role labels.
func (d *Driver) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopped = true
	cancel := d.cancel
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	d.wg.Wait()
	app := selector{}.with(labelApp, d.cfg.AppID).String()
	var errs []error
	for _, c := range []struct{ resource, label string }{
		{"services", app},
		{"persistentvolumeclaims", app},
		{"pods", d.app.String()},
		{"configmaps", d.app.String()},
	} {
		if err := d.deleteCollection(ctx, c.resource, listOpts{label: c.label}); err != nil {
			errs = append(errs, err)
		}
	}
	d.log.Info("driver stopped")
	return errors.Join(errs...)
}

// Running counts the executors Running in the snapshot.
func (d *Driver) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running
}

// RunningIDs lists the executor ids Running in the snapshot, ascending.
func (d *Driver) RunningIDs() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for id, e := range d.snap {
		if stateOf(e.pod, e.deleted) == stateRunning {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// WaitRunning waits until n executors run or ctx ends.
func (d *Driver) WaitRunning(ctx context.Context, n int) error {
	for {
		d.mu.Lock()
		running, ch := d.running, d.changed
		d.mu.Unlock()
		if running >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			st := d.Stats()
			return fmt.Errorf("%d of %d executors running (%d created, %d creation errors, last: %q): %w",
				running, n, st.Created, st.CreateErrors, st.LastCreateError, ctx.Err())
		}
	}
}

// Stats are what the run cost and achieved.
type Stats struct {
	Mode Mode `json:"mode"`
	// Requests counts requests by "verb resource", retries included.
	Requests        map[string]int `json:"requests"`
	Retries         int            `json:"retries"`
	WatchConnects   int            `json:"watchConnects"`
	WatchReconnects int            `json:"watchReconnects"`
	HTTPFallback    int            `json:"httpFallback"`
	Gone410         int            `json:"gone410"`
	WatchEnded      bool           `json:"watchEnded"`
	Created         int            `json:"created"`
	Running         int            `json:"running"`
	CreateErrors    int            `json:"createErrors"`
	// FirstCreateError and LastCreateError are the first and the latest
	// failed executor create's error.
	FirstCreateError string  `json:"firstCreateError,omitempty"`
	LastCreateError  string  `json:"lastCreateError,omitempty"`
	Series           []Point `json:"series,omitempty"`
}

// Stats returns a copy of the statistics.
func (d *Driver) Stats() Stats {
	d.st.mu.Lock()
	s := Stats{Mode: d.cfg.Mode, Requests: map[string]int{}, Retries: d.st.retries, WatchConnects: d.st.watchConnects,
		WatchReconnects: d.st.watchReconnects, HTTPFallback: d.st.httpFallback, Gone410: d.st.gone,
		Created: d.st.created, CreateErrors: d.st.createErrors,
		FirstCreateError: d.st.firstCreateError, LastCreateError: d.st.lastCreateError}
	for k, v := range d.st.requests {
		s.Requests[k] = v
	}
	d.st.mu.Unlock()
	d.mu.Lock()
	s.Running = d.running
	s.WatchEnded = d.watchErr != nil && errors.Is(d.watchErr, errGone)
	s.Series = slices.Clone(d.series)
	d.mu.Unlock()
	return s
}
