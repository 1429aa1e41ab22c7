package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
)

// scaleResult is one side of the many-drivers comparison.
type scaleResult struct {
	running             time.Duration
	runReqs, steadyReqs map[string]float64 // all resources, by verb
	runP50, runP99      float64            // API server latency, seconds
	steadyP99           float64
	steady              time.Duration
	rssMiB, cpuSeconds  float64             // all sidecars together
	observed            observed            // the unrelated client, until all Running
	seats, rejected     map[string]float64  // by priority level; rejected during the run
	cpu                 map[string]float64  // CPU seconds until all Running, by process
	lowWait             map[float64]float64 // workload-low's queue waits until all Running
	observerServer      map[float64]float64 // the API server's latency for the observer's requests until all Running
	apiServerRunDelay   float64             // seconds kube-apiserver's threads waited for a CPU until all Running
	apiServer           profiles            // kube-apiserver's, with the FlowSchema only
}

// scale runs o.drivers Spark 4.0 drivers at once, each asking for
// o.perDriver executors, first straight to the API server, then each
// through its own sidecar process, then through sidecars whose requests
// the chart's FlowSchema sends to their own priority level. An unrelated
// client reads a ConfigMap all along.
func scale(ctx context.Context, env *testenv.Env, o options, r *report) error {
	obs, err := startObserver(ctx, env)
	if err != nil {
		return err
	}
	defer obs.Stop()
	from, idleBefore, idleDelay := obs.now(), apiMetrics(ctx, env.Client), runDelay(env.Cluster.PIDs()["kube-apiserver"])
	time.Sleep(observerIdle) // the idle window is the measurement itself, not synchronisation
	idle := scaleResult{observed: obs.window(from, obs.now())}
	idleAfter := apiMetrics(ctx, env.Client)
	idle.lowWait = diff(lowWait(idleAfter), lowWait(idleBefore))
	idle.observerServer = diff(observerLatency(idleAfter), observerLatency(idleBefore))
	idle.apiServerRunDelay = runDelay(env.Cluster.PIDs()["kube-apiserver"]) - idleDelay
	idle.running = observerIdle
	direct, err := scaleRun(ctx, env, o, obs, "bench-scale-direct", false, false)
	if err != nil {
		return fmt.Errorf("drivers straight to the API server: %w", err)
	}
	viaSidecars, err := scaleRun(ctx, env, o, obs, "bench-scale-sidecar", true, false)
	if err != nil {
		return fmt.Errorf("drivers through sidecars: %w", err)
	}
	withAPF, err := scaleRun(ctx, env, o, obs, "bench-scale-apf", true, true)
	if err != nil {
		return fmt.Errorf("drivers through sidecars with the chart's FlowSchema: %w", err)
	}
	r.line("## 5. %d drivers at once, %d executors each", o.drivers, o.perDriver)
	r.line("")
	r.line("%d driver emulators (Spark 4.0 defaults) start together and each asks for %d executors: first straight to the API server (with a ServiceAccount token, as a driver pod's JVM would, so that API Priority and Fairness treats them as it treats real drivers), then each through its own `sparklet sidecar` process (%d processes), then the same with the chart's FlowSchema and priority level applied (`helm template` of `charts/sparklet` with its default `flowControl` values, the namespace in `flowControl.namespaces`). Requests and latency are the API server's own (`apiserver_request_total`, `apiserver_request_duration_seconds` without WATCH), for all clients and resources, kwok's status updates included; the steady window follows all-Running.", o.drivers, o.perDriver, o.drivers)
	r.line("")
	r.line("| | all Running | requests during the run | request rate | p50 | p99 | steady requests/min | steady p99 |")
	r.line("|---|---|---|---|---|---|---|---|")
	row := func(name string, x scaleResult) {
		r.line("| %s | %s | %.0f (%s) | %.0f/s | %s | %s | %.0f (%s) | %s |", name, x.running.Round(100*time.Millisecond),
			sum(x.runReqs), verbs(x.runReqs), sum(x.runReqs)/x.running.Seconds(), secs(x.runP50), secs(x.runP99),
			sum(x.steadyReqs)/x.steady.Minutes(), verbs(perMinute(x.steadyReqs, x.steady.Minutes())), secs(x.steadyP99))
	}
	row("straight to the API server", direct)
	row("through sidecars", viaSidecars)
	row("through sidecars, with the chart's FlowSchema", withAPF)
	r.line("")
	r.line("- Through sidecars, all-Running comes %s; the API server sees **%.2f×** the requests during the run and **%.2f×** the p99 latency, and **%.2f×** the requests per steady minute.",
		faster(direct.running, viaSidecars.running), sum(viaSidecars.runReqs)/sum(direct.runReqs), viaSidecars.runP99/direct.runP99,
		(sum(viaSidecars.steadyReqs)/viaSidecars.steady.Minutes())/(sum(direct.steadyReqs)/direct.steady.Minutes()))
	r.line("- The %d sidecars together: peak RSS %.0f MiB (%.0f MiB each), %.1f CPU seconds.", o.drivers, viaSidecars.rssMiB, viaSidecars.rssMiB/float64(o.drivers), viaSidecars.cpuSeconds)
	r.line("")
	flowControlReport(ctx, env, o, r, idle, direct, viaSidecars, withAPF)
	return nil
}

// faster says how much sooner b finished than a.
func faster(a, b time.Duration) string {
	if b <= a {
		return fmt.Sprintf("**%.1f×** sooner", a.Seconds()/b.Seconds())
	}
	return fmt.Sprintf("**%.1f×** later", b.Seconds()/a.Seconds())
}

func secs(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Microsecond).String()
}

func scaleRun(ctx context.Context, env *testenv.Env, o options, obs *observer, ns string, viaSidecar, flowControl bool) (scaleResult, error) {
	var res scaleResult
	if err := newNamespace(ctx, env, ns, viaSidecar); err != nil {
		return res, err
	}
	if flowControl {
		if err := applyChartFlowControl(ctx, env, o, ns); err != nil {
			return res, err
		}
	}
	var account *rest.Config
	if !viaSidecar {
		var err error
		if account, err = driverToken(ctx, env, ns); err != nil {
			return res, err
		}
	}
	jvms := make([]*emulator.Driver, o.drivers)
	sidecars := make([]*testenv.Sidecar, o.drivers)
	defer func() {
		for _, sc := range sidecars {
			if sc != nil {
				stopSidecar(sc)
			}
		}
	}()
	err := parallel(len(jvms), 4, func(i int) error {
		name := fmt.Sprintf("driver-%d", i)
		if !viaSidecar {
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod(name), metav1.CreateOptions{}); err != nil {
				return err
			}
			jvm, err := emulatorAs(account, ns, fmt.Sprintf("spark-scale-%d", i), name)
			jvms[i] = jvm
			return err
		}
		sc, err := startSidecar(ctx, env, ns, name)
		sidecars[i] = sc
		if err != nil {
			return err
		}
		jvms[i], _, err = sidecarEmulator(sc)
		return err
	})
	if err != nil {
		return res, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, jvm := range jvms {
		if err := jvm.Start(runCtx); err != nil {
			return res, err
		}
	}
	total := o.drivers * o.perDriver
	beforeAll := apiMetrics(ctx, env.Client)
	before := withoutObserver(beforeAll)
	cpuBefore := cpuSeconds(env, sidecars)
	delayBefore := runDelay(env.Cluster.PIDs()["kube-apiserver"])
	start := time.Now()
	observeFrom := obs.now()
	run := watchRunning(runCtx, env.Client, ns, total, start)
	profiled := func() profiles { return profiles{err: errors.New("not taken")} }
	if flowControl {
		admin, err := rest.HTTPClientFor(env.Cluster.RESTConfig())
		if err != nil {
			return res, err
		}
		profiled = takeProfiles(ctx, admin, env.Cluster.RESTConfig().Host, o.out+"/profiles", "kube-apiserver", profileSeconds)
	}
	for _, jvm := range jvms {
		jvm.SetTarget(o.perDriver)
	}
	select {
	case <-run.done:
	case <-time.After(10 * time.Minute):
		return res, fmt.Errorf("not all %d executors Running after 10 minutes", total)
	}
	res.running = run.at
	res.observed = obs.window(observeFrom, obs.now())
	res.cpu = diff(cpuSeconds(env, sidecars), cpuBefore)
	res.apiServerRunDelay = runDelay(env.Cluster.PIDs()["kube-apiserver"]) - delayBefore
	afterAll := apiMetrics(ctx, env.Client)
	res.observerServer = diff(observerLatency(afterAll), observerLatency(beforeAll))
	after := withoutObserver(afterAll)
	var rejectedBefore map[string]float64
	_, rejectedBefore = levelSeats(before)
	res.seats, res.rejected = levelSeats(after)
	res.rejected = diff(res.rejected, rejectedBefore)
	res.lowWait = diff(lowWait(after), lowWait(before))
	res.runReqs = diff(requestsByVerb(after, ""), requestsByVerb(before, ""))
	runLat := diff(latencyBuckets(after), latencyBuckets(before))
	res.runP50, res.runP99 = quantile(0.5, runLat), quantile(0.99, runLat)
	res.apiServer = profiled()

	t0 := time.Now()
	time.Sleep(o.steady) // the steady window is the measurement itself, not synchronisation
	end := withoutObserver(apiMetrics(ctx, env.Client))
	res.steady = time.Since(t0)
	res.steadyReqs = diff(requestsByVerb(end, ""), requestsByVerb(after, ""))
	res.steadyP99 = quantile(0.99, diff(latencyBuckets(end), latencyBuckets(after)))
	for _, sc := range sidecars {
		if sc != nil {
			rss, cpu := procStats(sc.PID())
			res.rssMiB += rss / 1024
			res.cpuSeconds += cpu
		}
	}
	var wg sync.WaitGroup
	for _, jvm := range jvms {
		wg.Add(1)
		go func() { defer wg.Done(); _ = jvm.Stop(ctx) }()
	}
	wg.Wait()
	stop()
	cleanup(ctx, env, ns)
	return res, nil
}

// parallel runs f(0..n-1) with at most limit at a time and returns the
// first error.
func parallel(n, limit int, f func(i int) error) error {
	sem := make(chan struct{}, limit)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
