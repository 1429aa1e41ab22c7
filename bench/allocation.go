package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
)

// run is one allocation contender's result.
type result struct {
	name               string
	created, running   time.Duration
	runReqs, idleReqs  map[string]float64
	idleMinutes        float64
	series             []point
	rssKiB, cpuSeconds float64
	note               string
	probe              probe
	prof               profiles
	// createSum and createCount are the sidecar's own timing of its
	// creates on the API server during the run.
	createSum, createCount float64
	// jvm marks a real driver; first is its pod's start to its first
	// executor, and the times above count from that executor.
	jvm       bool
	first     time.Duration
	jvmRSSKiB float64
}

// sidecarCreates reads the sidecar's executor create histogram's sum and
// count.
func sidecarCreates(ctx context.Context, sc *testenv.Sidecar) (sum, count float64) {
	ms := scrape(ctx, http.DefaultClient, "http://"+sc.Metrics+"/metrics")
	return value(ms, "sparklet_sidecar_executor_create_seconds_sum"), value(ms, "sparklet_sidecar_executor_create_seconds_count")
}

// profileSeconds is the profiling window; it starts with the allocation
// and ends before the last executor is created.
const profileSeconds = 10

type point struct{ s, running float64 }

func verbs(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		// Per-minute rates can be fractions; counts are whole.
		parts = append(parts, k+" "+strconv.FormatFloat(math.Round(m[k]*10)/10, 'f', -1, 64))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// running follows the Running executors of a namespace.
type running struct {
	reached chan struct{} // closed when n run
	done    chan struct{} // closed after the last sample; then read the rest
	at      time.Duration // since start, when n ran
	series  []point
	// firstSeen and allCreated are closed when the first executor and the
	// nth appear; then first and created (since start) are set.
	firstSeen, allCreated chan struct{}
	first, created        time.Duration
}

// watchRunning counts Running executors in ns from an informer, samples
// the count every 250 ms and notes the moment n run.
func watchRunning(ctx context.Context, c kubernetes.Interface, ns string, n int, start time.Time) *running {
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "spark-role=executor" }))
	inf := f.Core().V1().Pods().Informer()
	r := &running{reached: make(chan struct{}), done: make(chan struct{}), firstSeen: make(chan struct{}), allCreated: make(chan struct{})}
	var once, firstOnce, createdOnce sync.Once
	count := func() int {
		k := 0
		for _, o := range inf.GetStore().List() {
			if o.(*corev1.Pod).Status.Phase == corev1.PodRunning {
				k++
			}
		}
		return k
	}
	check := func() {
		firstOnce.Do(func() { r.first = time.Since(start); close(r.firstSeen) })
		if len(inf.GetStore().List()) >= n {
			createdOnce.Do(func() { r.created = time.Since(start); close(r.allCreated) })
		}
		if count() >= n {
			once.Do(func() { r.at = time.Since(start); close(r.reached) })
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { check() },
		UpdateFunc: func(any, any) { check() },
	})
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.reached:
				r.series = append(r.series, point{r.at.Seconds(), float64(n)})
				close(r.done)
				return
			case <-t.C:
			}
			r.series = append(r.series, point{time.Since(start).Seconds(), float64(count())})
		}
	}()
	return r
}

func executorPod(app string, i int) *corev1.Pod {
	mem := resource.MustParse("1408Mi")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-exec-%d", app, i), Labels: map[string]string{
			"spark-app-selector": app, "spark-role": "executor", "spark-exec-id": strconv.Itoa(i)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark-kubernetes-executor", Image: "apache/spark:4.0.0",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: mem}},
		}}},
	}
}

func allocation(ctx context.Context, env *testenv.Env, o options, r *report) ([]result, error) {
	var results []result
	for _, contender := range []func(context.Context, *testenv.Env, options) (result, error){raw, direct, throughSidecar} {
		res, err := contender(ctx, env, o)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	a, b, c := results[0], results[1], results[2]
	r.line("## 3. Allocating %d executors", o.executors)
	r.line("")
	r.line("Three contenders in one run, each in its own namespace, each watched by the same informer. (a) client-go creating executor pods with 32 workers and no client-side rate limit; (b) the driver emulator with Spark 4.0 defaults (batch 10 per 1 s) talking straight to the API server; (c) the same emulator through the sparklet sidecar, with the batch size the webhook sets (`spark.kubernetes.allocation.batch.size`: sparklet's default, as `bench/policy.yaml` leaves it alone).")
	r.line("")
	r.line("| contender | all created | all Running | create rate | pod requests during the run | pod requests per idle minute |")
	r.line("|---|---|---|---|---|---|")
	for _, x := range results {
		r.line("| %s | %s | %s | %.0f/s | %s | %s |", x.name, x.created.Round(100*time.Millisecond), x.running.Round(100*time.Millisecond),
			float64(o.executors)/x.created.Seconds(), verbs(x.runReqs), idleVerbs(x))
	}
	r.line("")
	r.line("- (c) creates at **%.2f×** the rate of (a) (target ≥ 0.8×).", a.created.Seconds()/c.created.Seconds())
	r.line("- (c) reaches all-Running **%.1f×** faster than (b) (target ≥ 5×).", b.running.Seconds()/c.running.Seconds())
	r.line("- (c) reaches all-Running in %.2f× the time of (a), the raw limit: Running is paced by how fast pods are bound and started on this cluster (%.0f pods/s for (a)).",
		c.running.Seconds()/a.running.Seconds(), float64(o.executors)/a.running.Seconds())
	r.line("- LIST requests on pods per idle minute: (b) %.1f, (c) %.1f (targets 2 and 0), over %.1f idle minute(s).",
		perMinute(b.idleReqs, b.idleMinutes)["LIST"], perMinute(c.idleReqs, c.idleMinutes)["LIST"], c.idleMinutes)
	r.line("- Sidecar (c): peak RSS %.0f MiB, %.1f CPU seconds over the run. %s", c.rssKiB/1024, c.cpuSeconds, c.note)
	r.line("")
	p := c.probe
	r.line("### Where (c)'s create time goes")
	r.line("")
	r.line("Spark's allocator creates a round's executors one after another (`ExecutorPodsAllocator.requestNewExecutors`), so (c)'s create rate is one create's round trip times the count, plus the waits between rounds. Before (c)'s run, %d executor pods were created one at a time through the sidecar with the JVM's token, then %d straight to the API server:", p.n, p.n)
	r.line("")
	r.line("| one create | p50 | p99 |")
	r.line("|---|---|---|")
	r.line("| through the sidecar | %s | %s |", p.viaSidecar, p.viaSidecar99)
	r.line("| straight to the API server | %s | %s |", p.direct, p.direct99)
	r.line("| **ratio** | **%.2f×** | **%.2f×** |", p.viaSidecar.Seconds()/p.direct.Seconds(), p.viaSidecar99.Seconds()/p.direct99.Seconds())
	r.line("")
	if c.createCount > 0 {
		mean := time.Duration(c.createSum / c.createCount * float64(time.Second))
		r.line("During (c)'s run the sidecar timed its %.0f creates on the API server at %s each on average (`sparklet_sidecar_executor_create_seconds`), %s in all of (c)'s %s to all-created; the rest is the JVM's own time and the allocator's waits between rounds. The API server is slower per create than in the probe above because it is scheduling and updating the executors already created. (a) overlaps 32 creates at a time, which one JVM thread cannot.",
			c.createCount, mean.Round(100*time.Microsecond), time.Duration(c.createSum*float64(time.Second)).Round(100*time.Millisecond), c.created.Round(100*time.Millisecond))
	}
	r.line("")
	r.profiles(fmt.Sprintf("The sidecar during (c)'s first %d s", profileSeconds), c.prof)
	return results, nil
}

func idleVerbs(x result) string {
	if x.idleMinutes == 0 {
		return "not measured (nothing runs after the creates)"
	}
	return verbs(perMinute(x.idleReqs, x.idleMinutes))
}

func perMinute(m map[string]float64, minutes float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = v / minutes
	}
	return out
}

func newNamespace(ctx context.Context, env *testenv.Env, name string, optIn bool) error {
	return env.CreateNamespace(ctx, name, optIn)
}

// finish measures the idle window and deletes the executors.
func finish(ctx context.Context, env *testenv.Env, o options, ns string, res *result, before map[string]float64) {
	res.runReqs = diff(podRequests(ctx, env.Client), before)
	idleStart := podRequests(ctx, env.Client)
	t0 := time.Now()
	time.Sleep(o.idle) // an idle window is the measurement itself, not synchronisation
	res.idleReqs = diff(podRequests(ctx, env.Client), idleStart)
	res.idleMinutes = time.Since(t0).Minutes()
}

func cleanup(ctx context.Context, env *testenv.Env, ns string) {
	_ = env.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
		return err == nil && len(l.Items) == 0, nil
	})
}

func raw(ctx context.Context, env *testenv.Env, o options) (result, error) {
	ns := "bench-raw"
	res := result{name: "(a) client-go, 32 workers"}
	if err := newNamespace(ctx, env, ns, false); err != nil {
		return res, err
	}
	rc := env.Cluster.RESTConfig()
	rc.QPS, rc.Burst = -1, 0 // no client-side limit: the API server's raw rate
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return res, err
	}
	before := podRequests(ctx, env.Client)
	start := time.Now()
	run := watchRunning(ctx, env.Client, ns, o.executors, start)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := c.CoreV1().Pods(ns).Create(ctx, executorPod("raw", i), metav1.CreateOptions{}); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := 1; i <= o.executors; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.created = time.Since(start)
	<-run.done
	res.running = run.at
	res.series = run.series
	// Nothing of (a) runs after its creates: no idle window.
	res.runReqs = diff(podRequests(ctx, env.Client), before)
	cleanup(ctx, env, ns)
	return res, nil
}

// quietLog keeps the emulators' logs to warnings and errors.
func quietLog() *logrus.Entry {
	l := emulator.JSONLog(os.Stderr)
	l.Logger.SetLevel(logrus.WarnLevel)
	return l
}

// directEmulator is a Spark 4.0 driver with Spark's defaults talking to
// the API server with the admin credentials.
func directEmulator(env *testenv.Env, ns, app, driver string) (*emulator.Driver, error) {
	return emulatorAs(env.Cluster.RESTConfig(), ns, app, driver)
}

// emulatorAs is a Spark 4.0 driver talking straight to the API server
// with the credentials in rc.
func emulatorAs(rc *rest.Config, ns, app, driver string) (*emulator.Driver, error) {
	cfg := emulator.NewConfig(emulator.Spark40)
	cfg.Namespace, cfg.AppID, cfg.DriverPodName, cfg.ExecutorImage, cfg.Log = ns, app, driver, "apache/spark:4.0.0", quietLog()
	cfg, err := emulator.FromREST(rc, cfg)
	if err != nil {
		return nil, err
	}
	return emulator.New(cfg)
}

// sidecarEmulator is a Spark 4.0 driver configured as the injected conf
// says, talking to its sidecar.
func sidecarEmulator(sc *testenv.Sidecar) (*emulator.Driver, int, error) {
	cfg, err := sc.EmulatorConfig(emulator.Spark40)
	if err != nil {
		return nil, 0, err
	}
	cfg.ExecutorImage, cfg.Log = "apache/spark:4.0.0", quietLog()
	jvm, err := emulator.New(cfg)
	return jvm, cfg.BatchSize, err
}

func direct(ctx context.Context, env *testenv.Env, o options) (result, error) {
	ns := "bench-direct"
	res := result{name: "(b) Spark 4.0 defaults, straight to the API server"}
	if err := newNamespace(ctx, env, ns, false); err != nil {
		return res, err
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod("driver"), metav1.CreateOptions{}); err != nil {
		return res, err
	}
	jvm, err := directEmulator(env, ns, "spark-direct", "driver")
	if err != nil {
		return res, err
	}
	return emulate(ctx, env, o, ns, jvm, res, nil)
}

func throughSidecar(ctx context.Context, env *testenv.Env, o options) (result, error) {
	ns := "bench-sidecar"
	res := result{}
	if err := newNamespace(ctx, env, ns, true); err != nil {
		return res, err
	}
	sc, err := startSidecar(ctx, env, ns, "driver", "--profiling")
	if err != nil {
		return res, err
	}
	defer stopSidecar(sc)
	res.probe, err = createProbe(ctx, env, sc)
	if err != nil {
		return res, err
	}
	jvm, batch, err := sidecarEmulator(sc)
	if err != nil {
		return res, err
	}
	res.name = fmt.Sprintf("(c) the same emulator through the sidecar, batch %d", batch)
	return emulate(ctx, env, o, ns, jvm, res, sc)
}

// stopSidecar ends a sidecar started by startSidecar and removes its
// directory.
func stopSidecar(sc *testenv.Sidecar) {
	sc.Signal(syscall.SIGTERM)
	if sc.Exited() != nil {
		select {
		case <-sc.Exited():
		case <-time.After(30 * time.Second):
		}
	}
	_ = os.RemoveAll(sc.Dir)
}

// startSidecar creates an injected driver pod and runs its sidecar.
func startSidecar(ctx context.Context, env *testenv.Env, ns, name string, args ...string) (*testenv.Sidecar, error) {
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod(name), metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-sidecar-")
	if err != nil {
		return nil, err
	}
	sc, err := env.NewSidecar(created, dir)
	if err != nil {
		return nil, err
	}
	sc.ExtraArgs = args
	return sc, sc.Start(ctx)
}

// probe is the latency of one executor create, made one at a time as the
// JVM makes them, through the sidecar and straight to the API server.
type probe struct {
	n                      int
	viaSidecar, direct     time.Duration // medians
	viaSidecar99, direct99 time.Duration
}

// createProbe creates executor pods of the sidecar's application one at a
// time, first through the sidecar's localhost API with the JVM's token,
// then with client-go straight to the API server, and deletes them.
func createProbe(ctx context.Context, env *testenv.Env, sc *testenv.Sidecar) (probe, error) {
	p := probe{n: 100}
	token, err := sc.Token()
	if err != nil {
		return p, err
	}
	conf, _ := patches.EffectiveConf(sc.Pod.Annotations)
	app, ns := conf["spark.app.id"], sc.Pod.Namespace
	client := &http.Client{}
	var viaSidecar, direct []time.Duration
	for i := 0; i < p.n; i++ {
		body, _ := json.Marshal(executorPod(app, 100000+i))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+sc.Listen+"/api/v1/namespaces/"+ns+"/pods", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return p, err
		}
		_, _ = drain(resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return p, fmt.Errorf("create through the sidecar: %s", resp.Status)
		}
		viaSidecar = append(viaSidecar, time.Since(t0))
	}
	for i := 0; i < p.n; i++ {
		t0 := time.Now()
		if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, executorPod(app, 200000+i), metav1.CreateOptions{}); err != nil {
			return p, err
		}
		direct = append(direct, time.Since(t0))
	}
	cleanup(ctx, env, ns)
	sort.Slice(viaSidecar, func(i, j int) bool { return viaSidecar[i] < viaSidecar[j] })
	sort.Slice(direct, func(i, j int) bool { return direct[i] < direct[j] })
	p.viaSidecar, p.direct = pct(viaSidecar, 0.5), pct(direct, 0.5)
	p.viaSidecar99, p.direct99 = pct(viaSidecar, 0.99), pct(direct, 0.99)
	return p, nil
}

func emulate(ctx context.Context, env *testenv.Env, o options, ns string, jvm *emulator.Driver, res result, sc *testenv.Sidecar) (result, error) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	before := podRequests(ctx, env.Client)
	if err := jvm.Start(runCtx); err != nil {
		return res, err
	}
	start := time.Now()
	run := watchRunning(ctx, env.Client, ns, o.executors, start)
	var events *watchCount
	var profiled func() profiles
	if sc != nil {
		events = countWatchEvents(runCtx, sc, ns)
		profiled = takeProfiles(ctx, http.DefaultClient, "http://"+sc.Metrics, o.out+"/profiles", "sidecar", profileSeconds)
		res.createSum, res.createCount = sidecarCreates(ctx, sc)
	}
	jvm.SetTarget(o.executors)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		return jvm.Stats().Created >= o.executors, nil
	})
	if err != nil {
		st := jvm.Stats()
		return res, fmt.Errorf("%s: %w (%d created, %d creation errors, last: %s)", res.name, err, st.Created, st.CreateErrors, st.LastCreateError)
	}
	res.created = time.Since(start)
	if sc != nil {
		sum, count := sidecarCreates(ctx, sc)
		res.createSum, res.createCount = sum-res.createSum, count-res.createCount
	}
	if profiled != nil {
		res.prof = profiled()
	}
	<-run.done
	res.running = run.at
	res.series = run.series
	if sc != nil {
		n, first, last := events.get()
		res.note = listComparison(ctx, env, ns, sc) + fmt.Sprintf(" One extra JVM-style watch on the sidecar received %d events during the run, %.0f per second.",
			n, float64(n)/last.Sub(first).Seconds())
	}
	finish(ctx, env, o, ns, &res, before)
	if sc != nil {
		res.rssKiB, res.cpuSeconds = procStats(sc.PID())
	}
	_ = jvm.Stop(ctx)
	stop()
	cleanup(ctx, env, ns)
	return res, nil
}

// listComparison times the JVM's executor LIST from the sidecar's cache
// against the same LIST from the API server.
func listComparison(ctx context.Context, env *testenv.Env, ns string, sc *testenv.Sidecar) string {
	fromSidecar, fromAPI, err := listTimes(ctx, env, ns, sc)
	if err != nil {
		return fmt.Sprintf("The LIST comparison failed: %v.", err)
	}
	return fmt.Sprintf("A LIST of the executors (median of 20, plain HTTP GETs read to the end): %s from the sidecar's cache, %s from the API server (the sidecar takes %.2f× the API server's time).",
		fromSidecar, fromAPI, fromSidecar.Seconds()/fromAPI.Seconds())
}

// procStats reads peak RSS (KiB) and CPU seconds of a live process.
func procStats(pid int) (rssKiB, cpu float64) {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			rssKiB, _ = strconv.ParseFloat(strings.Fields(line)[1], 64)
		}
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if f := strings.Fields(string(stat)); len(f) > 15 {
		u, _ := strconv.ParseFloat(f[13], 64)
		s, _ := strconv.ParseFloat(f[14], 64)
		cpu = (u + s) / 100 // clock ticks, USER_HZ = 100
	}
	return rssKiB, cpu
}

// watchCount counts the events one watch on the sidecar delivers.
type watchCount struct {
	mu          sync.Mutex
	n           int
	first, last time.Time
}

func (w *watchCount) get() (int, time.Time, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, w.first, w.last
}

// countWatchEvents opens the executor watch a JVM opens (HTTP streaming
// here; the JVM's own watch uses WebSocket) and counts its events.
func countWatchEvents(ctx context.Context, sc *testenv.Sidecar, ns string) *watchCount {
	w := &watchCount{}
	token, _ := sc.Token()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+sc.Listen+"/api/v1/namespaces/"+ns+"/pods?labelSelector=spark-role%3Dexecutor&watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			w.mu.Lock()
			if w.n == 0 {
				w.first = time.Now()
			}
			w.n++
			w.last = time.Now()
			w.mu.Unlock()
		}
	}()
	return w
}
