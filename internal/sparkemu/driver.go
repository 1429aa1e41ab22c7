package sparkemu

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config is what the JVM's configuration would say.
type Config struct {
	Server    string // spark.master without k8s://
	Token     string // spark.kubernetes.authenticate.oauthToken(File)
	TLS       *tlsConfig
	Namespace string // spark.kubernetes.namespace
	AppID     string // spark.app.id
	DriverPod string // spark.kubernetes.driver.pod.name
	Prefix    string // spark.kubernetes.executor.podNamePrefix
	Image     string // spark.kubernetes.container.image
	Mode      Mode
	// BatchSize is spark.kubernetes.allocation.batch.size: 5 in 3.5, 10 in 4.0.
	BatchSize int
	// BatchDelay is spark.kubernetes.allocation.batch.delay, 1s.
	BatchDelay time.Duration
	// PollInterval is spark.kubernetes.executor.apiPollingInterval, 30s.
	PollInterval time.Duration
	// DeleteGracePeriod is spark.kubernetes.dynamicAllocation.deleteGracePeriod, 5s.
	DeleteGracePeriod time.Duration
}

func (c *Config) defaults() {
	if c.Mode == "" {
		c.Mode = Spark40
	}
	if c.BatchSize == 0 {
		c.BatchSize = 5 // K/deploy/k8s/Config.scala KUBERNETES_ALLOCATION_BATCH_SIZE, 3.5.4
		if c.Mode == Spark40 {
			c.BatchSize = 10 // 4.0.0 (SPARK-50996)
		}
	}
	if c.BatchDelay == 0 {
		c.BatchDelay = time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 30 * time.Second
	}
	if c.DeleteGracePeriod == 0 {
		c.DeleteGracePeriod = 5 * time.Second
	}
	if c.Prefix == "" {
		c.Prefix = c.AppID
	}
}

// Driver is one emulated Spark driver.
type Driver struct {
	cfg    Config
	c      *client
	driver *corev1.Pod
	appSel selector

	mu      sync.Mutex
	pods    map[string]*corev1.Pod // the latest snapshot
	pending map[string]time.Time   // created, not yet seen in a snapshot
	// alive are the executors this driver created that have not been seen
	// deleted or finished. Counting them, not the snapshot, keeps a poll
	// whose LIST predates the newest creates from causing extra creates.
	alive    map[string]bool
	stopped  bool
	nextID   int
	target   int
	created  int
	failures []string
	watchEnd error
	fallback bool
	started  time.Time
	series   []Point
	changed  chan struct{}
}

// Point is one sample of the allocation time series.
type Point struct {
	Seconds float64 `json:"s"`
	Running int     `json:"running"`
	Created int     `json:"created"`
}

// New returns a driver for cfg.
func New(cfg Config) *Driver {
	cfg.defaults()
	d := &Driver{cfg: cfg, c: newClient(cfg.Server, cfg.Token, cfg.TLS.get(), cfg.Mode),
		pods: map[string]*corev1.Pod{}, pending: map[string]time.Time{}, alive: map[string]bool{}, changed: make(chan struct{}, 1)}
	d.appSel = selector{equals: map[string]string{"spark-app-selector": cfg.AppID, "spark-role": "executor"}}
	return d
}

func (d *Driver) ns() string { return "/api/v1/namespaces/" + d.cfg.Namespace }

// Start makes the calls of SparkContext start-up in client mode.
func (d *Driver) Start(ctx context.Context) error {
	// 1. ExecutorPodsAllocator: GET of the driver pod; a null result is
	// fatal ("No pod was found named ..."), K/scheduler/cluster/k8s/ExecutorPodsAllocator.scala.
	r, err := d.c.do(ctx, "get", "GET", d.ns()+"/pods/"+d.cfg.DriverPod, "", nil, "")
	if err != nil {
		return err
	}
	if r.code == http.StatusNotFound {
		// Spark's own wording (SparkException in ExecutorPodsAllocator).
		return fmt.Errorf("%s", "No pod was found named "+d.cfg.DriverPod+" in the cluster in the namespace "+d.cfg.Namespace)
	}
	if r.code != http.StatusOK {
		return fmt.Errorf("get driver pod: HTTP %d: %s", r.code, r.body)
	}
	d.driver = &corev1.Pod{}
	if err := json.Unmarshal(r.body, d.driver); err != nil {
		return fmt.Errorf("driver pod: %w", err)
	}
	// 2. podAllocator.start: waitUntilReady(1s) is an informer on the driver
	// pod: LIST, then WATCH with timeoutSeconds=600 (F/BaseOperation.java
	// informOnCondition; Reflector.java). A timeout is only logged.
	field := "metadata.name=" + d.cfg.DriverPod
	r, err = d.c.do(ctx, "list", "GET", d.ns()+"/pods", query(field, ""), nil, "")
	if err == nil && r.code == http.StatusOK {
		var list corev1.PodList
		_ = json.Unmarshal(r.body, &list)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = d.watch(wctx, query(field, "", "resourceVersion="+list.ResourceVersion, "timeoutSeconds=600", "allowWatchBookmarks=true", "watch=true"), func(metav1.WatchEvent) {})
		cancel()
	}
	// 3. setUpExecutorConfigMap: POST, not wrapped in try
	// (KubernetesClusterSchedulerBackend.scala; KubernetesClientUtils.scala).
	if err := d.postConfigMap(ctx); err != nil {
		return err
	}
	// 4. ExecutorPodsWatchSnapshotSource: WATCH executors, no resourceVersion.
	d.started = time.Now()
	go d.watchExecutors(ctx)
	// 5. ExecutorPodsPollingSnapshotSource: LIST every apiPollingInterval,
	// first after one interval.
	go d.poll(ctx)
	go d.allocate(ctx)
	return nil
}

func (d *Driver) postConfigMap(ctx context.Context) error {
	yes := true
	cm := corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            "spark-exec-" + strings.TrimPrefix(d.cfg.AppID, "spark-") + "-conf-map",
			Labels:          map[string]string{"spark-app-selector": d.cfg.AppID, "spark-role": "executor"},
			OwnerReferences: []metav1.OwnerReference{d.ownerRef()},
		},
		Immutable: &yes,
		Data:      map[string]string{"spark.properties": "spark.app.id=" + d.cfg.AppID + "\n", "spark.kubernetes.namespace": d.cfg.Namespace},
	}
	body, _ := json.Marshal(cm)
	r, err := d.c.do(ctx, "create", "POST", d.ns()+"/configmaps", "", body, d.c.jsonContentType())
	if err != nil {
		return err
	}
	if r.code != http.StatusCreated && r.code != http.StatusOK {
		return fmt.Errorf("executor ConfigMap: HTTP %d: %s", r.code, r.body)
	}
	return nil
}

// ownerRef is built from the GET's apiVersion, kind, name and uid
// (KubernetesUtils.addOwnerReference).
func (d *Driver) ownerRef() metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: d.driver.APIVersion, Kind: d.driver.Kind, Name: d.driver.Name, UID: d.driver.UID, Controller: &yes}
}

func (d *Driver) watchExecutors(ctx context.Context) {
	rv := ""
	backoff := time.Second // fabric8 watchReconnectInterval, doubling to 32 s
	for ctx.Err() == nil {
		q := query("", d.appSel.String(), "allowWatchBookmarks=true", "watch=true")
		if rv != "" {
			q = query("", d.appSel.String(), "resourceVersion="+rv, "allowWatchBookmarks=true", "watch=true")
		}
		err := d.watch(ctx, q, func(e metav1.WatchEvent) {
			var p corev1.Pod
			if json.Unmarshal(e.Object.Raw, &p) != nil {
				return
			}
			rv = p.ResourceVersion
			if e.Type == "BOOKMARK" {
				return
			}
			d.update(&p, e.Type == "DELETED")
		})
		if err == errGone {
			// AbstractWatchManager.onStatus closes for good on 410; Spark's
			// onClose only logs. The driver goes on with polling alone.
			d.mu.Lock()
			d.watchEnd = err
			d.mu.Unlock()
			return
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 32*time.Second)
	}
}

// watch runs one watch over WebSocket, falling back to HTTP streaming when
// the upgrade is answered 200 or 503 (F/BaseOperation.submitWatch).
func (d *Driver) watch(ctx context.Context, q string, on func(metav1.WatchEvent)) error {
	d.c.count("watch")
	wsURL := "ws" + strings.TrimPrefix(d.c.base, "http") + d.ns() + "/pods?" + q
	cfg, err := websocket.NewConfig(wsURL, d.origin())
	if err != nil {
		return err
	}
	d.c.headers(cfg.Header)
	cfg.Header.Del("Accept")
	cfg.TlsConfig = d.c.wsTLS
	conn, err := websocket.DialConfig(cfg)
	if err != nil {
		// fabric8 falls back to an HTTP watch when the upgrade is answered
		// 200 or 503; x/net/websocket does not expose the status, so any
		// refused upgrade is retried as an HTTP watch, which fails the
		// same way for 401/403/404.
		var de *websocket.DialError
		if asDialError(err, &de) && de.Err == websocket.ErrBadStatus {
			d.mu.Lock()
			d.fallback = true
			d.mu.Unlock()
			return d.watchHTTP(ctx, q, on)
		}
		return err
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	for {
		var msg string
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			return err
		}
		var e metav1.WatchEvent
		if err := json.Unmarshal([]byte(msg), &e); err != nil {
			continue
		}
		if e.Type == "ERROR" {
			var st metav1.Status
			_ = json.Unmarshal(e.Object.Raw, &st)
			if st.Code == http.StatusGone {
				return errGone
			}
			return fmt.Errorf("watch error: %s", st.Message)
		}
		on(e)
	}
}

// origin is what AbstractWatchManager.startWatch sends: scheme://host[:port].
func (d *Driver) origin() string {
	return d.c.base
}

func (d *Driver) watchHTTP(ctx context.Context, q string, on func(metav1.WatchEvent)) error {
	req, err := http.NewRequestWithContext(ctx, "GET", d.c.base+d.ns()+"/pods?"+q, nil)
	if err != nil {
		return err
	}
	d.c.headers(req.Header)
	resp, err := d.c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: HTTP %d", resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var e metav1.WatchEvent
		if err := dec.Decode(&e); err != nil {
			return err
		}
		on(e)
	}
}

func (d *Driver) poll(ctx context.Context) {
	t := time.NewTicker(d.cfg.PollInterval)
	defer t.Stop()
	sel := selector{equals: d.appSel.equals, notEquals: map[string]string{"spark-exec-inactive": "true"}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r, err := d.c.do(ctx, "list", "GET", d.ns()+"/pods", query("", sel.String()), nil, "")
		if err != nil || r.code != http.StatusOK {
			continue
		}
		var list corev1.PodList
		if json.Unmarshal(r.body, &list) != nil {
			continue
		}
		// A poll replaces the whole snapshot (ExecutorPodsSnapshot).
		d.mu.Lock()
		d.pods = map[string]*corev1.Pod{}
		for i := range list.Items {
			p := list.Items[i]
			d.pods[p.Name] = &p
			delete(d.pending, p.Name)
		}
		d.mu.Unlock()
		d.signal()
	}
}

func (d *Driver) update(p *corev1.Pod, deleted bool) {
	d.mu.Lock()
	if deleted {
		delete(d.pods, p.Name)
	} else {
		d.pods[p.Name] = p
	}
	if deleted || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(d.alive, p.Name)
	}
	delete(d.pending, p.Name)
	d.mu.Unlock()
	d.signal()
}

func (d *Driver) signal() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// SetTarget asks for n executors, as spark.executor.instances or dynamic
// allocation would.
func (d *Driver) SetTarget(n int) {
	d.mu.Lock()
	d.target = n
	d.started = time.Now()
	d.mu.Unlock()
}

// allocate is ExecutorPodsAllocator.onNewSnapshots, run every batch delay.
func (d *Driver) allocate(ctx context.Context) {
	t := time.NewTicker(d.cfg.BatchDelay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			return
		}
		waiting := len(d.pending)
		toCreate := min(d.target-len(d.alive), d.cfg.BatchSize)
		excess := d.excessPending(len(d.alive) - d.target)
		finished := d.finished()
		d.sample()
		d.mu.Unlock()
		d.removeFinished(ctx, finished)
		if len(excess) > 0 {
			// Downscale: delete excess pending executors by collection
			// (ExecutorPodsAllocator.onNewSnapshots).
			sel := selector{equals: d.appSel.equals, in: map[string][]string{"spark-exec-id": ids(excess)}}
			_, _ = d.c.do(ctx, "deletecollection", "DELETE", d.ns()+"/pods", query("status.phase=Pending", sel.String()), deleteBody, "application/json")
		}
		// Spark requests a new batch only when every newly created pod has
		// appeared in a snapshot.
		if waiting > 0 || toCreate <= 0 {
			continue
		}
		// ExecutorPodsAllocator.getReusablePVCs: LIST the app's PVCs per
		// batch when a driver pod is set; errors are only logged.
		_, _ = d.c.do(ctx, "list", "GET", d.ns()+"/persistentvolumeclaims", query("", "spark-app-selector="+d.cfg.AppID), nil, "")
		for i := 0; i < toCreate; i++ {
			if err := d.createExecutor(ctx); err != nil {
				// The rest of the batch is abandoned; the ID is consumed
				// (requestNewExecutors). Spark retries on the next round.
				d.mu.Lock()
				d.failures = append(d.failures, err.Error())
				d.mu.Unlock()
				break
			}
		}
	}
}

// excessPending picks the newest pending executors beyond the target;
// callers hold d.mu.
func (d *Driver) excessPending(n int) []int {
	if n <= 0 {
		return nil
	}
	var pending []int
	for _, p := range d.pods {
		if p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
			id, _ := strconv.Atoi(p.Labels["spark-exec-id"])
			pending = append(pending, id)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(pending)))
	return pending[:min(n, len(pending))]
}

// finished lists executors that ended; callers hold d.mu.
func (d *Driver) finished() []string {
	var names []string
	for name, p := range d.pods {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			names = append(names, name)
		}
	}
	return names
}

// removeFinished is ExecutorPodsLifecycleManager.removeExecutorFromK8s with
// deleteOnTermination (the default): Spark 3.5 deletes by name, Spark 4.0
// GETs the pod first and deletes it only if it still exists.
func (d *Driver) removeFinished(ctx context.Context, names []string) {
	for _, name := range names {
		if d.cfg.Mode == Spark40 {
			r, err := d.c.do(ctx, "get", "GET", d.ns()+"/pods/"+name, "", nil, "")
			if err != nil || r.code == http.StatusNotFound {
				continue
			}
		}
		_, _ = d.c.do(ctx, "delete", "DELETE", d.ns()+"/pods/"+name, "", deleteBody, "application/json")
		d.mu.Lock()
		delete(d.pods, name)
		d.mu.Unlock()
	}
}

// Decommission is KubernetesClusterSchedulerBackend.labelDecommissioningExecs:
// LIST the executors, then per pod a JSON patch adding the label, with the
// resourceVersion that fabric8's edit diff adds (no GET: the items come
// from the list; HasMetadataOperation.edit, OperationSupport.handlePatch).
func (d *Driver) Decommission(ctx context.Context, execIDs []int, label, value string) error {
	sel := selector{equals: d.appSel.equals, in: map[string][]string{"spark-exec-id": ids(execIDs)}}
	r, err := d.c.do(ctx, "list", "GET", d.ns()+"/pods", query("", sel.String()), nil, "")
	if err != nil {
		return err
	}
	var list corev1.PodList
	if err := json.Unmarshal(r.body, &list); err != nil {
		return fmt.Errorf("decommission list: %w", err)
	}
	for _, p := range list.Items {
		patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/labels/%s","value":"%s"},{"op":"add","path":"/metadata/resourceVersion","value":%q}]`,
			strings.ReplaceAll(label, "/", "~1"), value, p.ResourceVersion)
		r, err := d.c.do(ctx, "patch", "PATCH", d.ns()+"/pods/"+p.Name, "", []byte(patch), "application/json-patch+json")
		if err != nil {
			return err
		}
		if r.code != http.StatusOK {
			return fmt.Errorf("decommission %s: HTTP %d: %s", p.Name, r.code, r.body)
		}
	}
	return nil
}

func (d *Driver) createExecutor(ctx context.Context) error {
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	d.mu.Unlock()
	pod := d.executorPod(id)
	body, _ := json.Marshal(pod)
	r, err := d.c.do(ctx, "create", "POST", d.ns()+"/pods", "", body, d.c.jsonContentType())
	if err != nil {
		return err
	}
	if r.code != http.StatusCreated && r.code != http.StatusOK {
		return fmt.Errorf("create %s: HTTP %d: %s", pod.Name, r.code, strings.TrimSpace(string(r.body)))
	}
	d.mu.Lock()
	if _, seen := d.pods[pod.Name]; !seen {
		d.pending[pod.Name] = time.Now()
	}
	d.alive[pod.Name] = true
	d.created++
	d.mu.Unlock()
	return nil
}

// executorPod is what BasicExecutorFeatureStep builds (K/deploy/k8s/features).
func (d *Driver) executorPod(id int) *corev1.Pod {
	mem := resource.MustParse("1408Mi") // 1g heap + 384Mi overhead
	version := "3.5.4"
	if d.cfg.Mode == Spark40 {
		version = "4.0.0"
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-exec-%d", d.cfg.Prefix, id),
			Labels: map[string]string{
				"spark-app-selector": d.cfg.AppID, "spark-role": "executor", "spark-exec-id": strconv.Itoa(id),
				"spark-exec-resourceprofile-id": "0", "spark-version": version, "spark-app-name": "emulated",
			},
			OwnerReferences: []metav1.OwnerReference{d.ownerRef()},
		},
		Spec: corev1.PodSpec{
			Hostname:      fmt.Sprintf("%s-exec-%d", d.cfg.Prefix, id),
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "spark-kubernetes-executor", Image: d.cfg.Image, Args: []string{"executor"},
				Env: []corev1.EnvVar{
					{Name: "SPARK_EXECUTOR_ID", Value: strconv.Itoa(id)},
					{Name: "SPARK_DRIVER_URL", Value: "spark://CoarseGrainedScheduler@" + d.driver.Status.PodIP + ":7078"},
					{Name: "SPARK_APPLICATION_ID", Value: d.cfg.AppID},
					{Name: "SPARK_EXECUTOR_CORES", Value: "1"},
					{Name: "SPARK_EXECUTOR_MEMORY", Value: "1g"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
				},
			}},
		},
	}
}

// sample records the time series; callers hold d.mu.
func (d *Driver) sample() {
	if d.started.IsZero() || d.target == 0 {
		return
	}
	running := 0
	for _, p := range d.pods {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	d.series = append(d.series, Point{Seconds: time.Since(d.started).Seconds(), Running: running, Created: d.created})
}

// Running counts executors in phase Running in the snapshot.
func (d *Driver) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, p := range d.pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// WaitRunning waits until n executors run.
func (d *Driver) WaitRunning(ctx context.Context, n int) error {
	for {
		if d.Running() >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			f := d.Stats().Failures
			if len(f) > 3 {
				f = f[len(f)-3:]
			}
			return fmt.Errorf("%d of %d executors running: %w (last creation errors: %v)", d.Running(), n, ctx.Err(), f)
		case <-d.changed:
		}
	}
}

// Kill is KubernetesClusterSchedulerBackend.doKillExecutors: after the
// delete grace period, LIST the running ones, LIST again for the log line,
// then DELETE the collection.
func (d *Driver) Kill(ctx context.Context, execIDs []int) error {
	select {
	case <-time.After(d.cfg.DeleteGracePeriod):
	case <-ctx.Done():
		return ctx.Err()
	}
	sel := selector{equals: d.appSel.equals, in: map[string][]string{"spark-exec-id": ids(execIDs)}}
	q := query("status.phase=Running", sel.String())
	r, err := d.c.do(ctx, "list", "GET", d.ns()+"/pods", q, nil, "")
	if err != nil {
		return err
	}
	var list corev1.PodList
	if json.Unmarshal(r.body, &list) != nil || len(list.Items) == 0 {
		return nil
	}
	if _, err := d.c.do(ctx, "list", "GET", d.ns()+"/pods", q, nil, ""); err != nil {
		return err
	}
	d.mu.Lock()
	d.target -= len(list.Items)
	d.mu.Unlock()
	r, err = d.c.do(ctx, "deletecollection", "DELETE", d.ns()+"/pods", q, deleteBody, "application/json")
	if err == nil && r.code != http.StatusOK {
		err = fmt.Errorf("kill: HTTP %d: %s", r.code, r.body)
	}
	return err
}

// Stop is KubernetesClusterSchedulerBackend.stop: four collection DELETEs,
// issued even when nothing was created.
func (d *Driver) Stop(ctx context.Context) error {
	// The allocator stops first (ExecutorPodsAllocator.stop), so nothing is
	// created again while the collections are deleted.
	d.mu.Lock()
	d.target, d.stopped = 0, true
	d.mu.Unlock()
	app := "spark-app-selector=" + d.cfg.AppID
	for _, call := range []struct{ resource, label string }{
		{"services", app},
		{"persistentvolumeclaims", app},
		{"pods", d.appSel.String()},
		{"configmaps", d.appSel.String()},
	} {
		r, err := d.c.do(ctx, "deletecollection", "DELETE", d.ns()+"/"+call.resource, query("", call.label), deleteBody, "application/json")
		if err != nil {
			return err
		}
		if r.code != http.StatusOK {
			return fmt.Errorf("stop: DELETE %s: HTTP %d: %s", call.resource, r.code, r.body)
		}
	}
	return nil
}

// Stats are what the run cost and achieved.
type Stats struct {
	Requests     map[string]int `json:"requests"`
	Retries      int            `json:"retries"`
	Created      int            `json:"created"`
	Running      int            `json:"running"`
	Failures     []string       `json:"failures,omitempty"`
	HTTPFallback bool           `json:"httpFallback"`
	WatchGone    bool           `json:"watchGone"`
	Series       []Point        `json:"series,omitempty"`
}

// Stats returns a copy of the statistics.
func (d *Driver) Stats() Stats {
	d.c.mu.Lock()
	req := map[string]int{}
	for k, v := range d.c.counts {
		req[k] = v
	}
	retries := d.c.retries
	d.c.mu.Unlock()
	running := d.Running()
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Requests: req, Retries: retries, Created: d.created, Running: running,
		Failures: append([]string(nil), d.failures...), HTTPFallback: d.fallback, WatchGone: d.watchEnd != nil,
		Series: append([]Point(nil), d.series...)}
}
