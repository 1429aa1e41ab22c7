package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	testenv "github.com/sparklet/sparklet/test/env"
)

// The many-drivers section's unrelated client: a ServiceAccount that
// reads one ResourceQuota in its own namespace, as a quota dashboard
// would, while the drivers start. Nothing else in the bench reads
// ResourceQuotas, so its requests can be left out of the API server's
// figures by their resource.
const observerNS, observerName, observerResource = "bench-observer", "observer", "resourcequotas"

// observerInterval paces the observer: one request at a time, a GET of
// its ResourceQuota and a LIST of the namespace's in turn.
const observerInterval = 25 * time.Millisecond

// apiServerFlags sizes kube-apiserver's concurrency for this machine: seats
// in all, two thirds for reads and one third for writes as its defaults
// (400 and 200) split them; 0 keeps the defaults. API Priority and
// Fairness shares these seats among its priority levels.
func apiServerFlags(seats int) []string {
	if seats <= 0 {
		return nil
	}
	mutating := seats / 3
	return []string{"--max-requests-inflight", strconv.Itoa(seats - mutating), "--max-mutating-requests-inflight", strconv.Itoa(mutating)}
}

// apiServerProfiling serves kube-apiserver's pprof profiles to its admin,
// which the many-drivers section reads during the burst with the
// FlowSchema; the local control plane turns them off, as hardened
// clusters do.
const apiServerProfiling = "--profiling=true"

// observation is one request of the observer.
type observation struct {
	at, took   time.Duration // since the observer started
	flowSchema string        // X-Kubernetes-PF-FlowSchema-UID
	failed     bool
}

type observer struct {
	start time.Time
	mu    sync.Mutex
	seen  []observation
	stop  context.CancelFunc
	done  chan struct{}
}

// startObserver creates the observer's namespace, ServiceAccount, Role and
// ConfigMap and starts its requests.
func startObserver(ctx context.Context, env *testenv.Env) (*observer, error) {
	if err := env.CreateNamespace(ctx, observerNS, false); err != nil {
		return nil, err
	}
	cs := env.Client
	for _, create := range []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(observerNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: observerName}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(observerNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: observerName},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{observerResource}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(observerNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: observerName},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: observerName},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: observerName, Namespace: observerNS}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ResourceQuotas(observerNS).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("observer: %w", err)
		}
	}
	exp := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(observerNS).CreateToken(ctx, observerName, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("observer token: %w", err)
	}
	admin := env.Cluster.RESTConfig()
	client, err := rest.HTTPClientFor(&rest.Config{Host: admin.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}})
	if err != nil {
		return nil, err
	}
	base := admin.Host + "/api/v1/namespaces/" + observerNS + "/" + observerResource
	paths := []string{base + "/team", base}
	runCtx, stop := context.WithCancel(ctx)
	o := &observer{start: time.Now(), stop: stop, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(observerInterval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			o.request(runCtx, client, paths[i%2])
		}
	}()
	return o, nil
}

func (o *observer) request(ctx context.Context, client *http.Client, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	ob := observation{at: t0.Sub(o.start)}
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ob.flowSchema = resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
		ob.failed = resp.StatusCode != http.StatusOK
	} else {
		ob.failed = ctx.Err() == nil
	}
	ob.took = time.Since(t0)
	if ctx.Err() != nil && err != nil {
		return
	}
	o.mu.Lock()
	o.seen = append(o.seen, ob)
	o.mu.Unlock()
}

// now is the observer's clock.
func (o *observer) now() time.Duration { return time.Since(o.start) }

// window is what the observer saw between from and to on its clock.
func (o *observer) window(from, to time.Duration) observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	var w observed
	for _, ob := range o.seen {
		if ob.at < from || ob.at >= to {
			continue
		}
		if ob.failed {
			w.failed++
			continue
		}
		w.lat = append(w.lat, ob.took)
		w.flowSchemas = appendNew(w.flowSchemas, ob.flowSchema)
	}
	sort.Slice(w.lat, func(i, j int) bool { return w.lat[i] < w.lat[j] })
	return w
}

func (o *observer) Stop() {
	o.stop()
	<-o.done
}

// observed is the observer's requests in one window.
type observed struct {
	lat         []time.Duration // sorted
	failed      int
	flowSchemas []string // UIDs that classified them
}

func appendNew(list []string, v string) []string {
	for _, s := range list {
		if s == v {
			return list
		}
	}
	return append(list, v)
}

// flowSchemaNames names FlowSchema UIDs and says which priority level
// each sends to; an empty UID means API Priority and Fairness is off.
func flowSchemaNames(ctx context.Context, env *testenv.Env, uids []string) string {
	list, err := env.Client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("? (%v)", err)
	}
	out := ""
	for i, uid := range uids {
		name := "none: API Priority and Fairness is off"
		for _, fs := range list.Items {
			if string(fs.UID) == uid {
				name = fmt.Sprintf("FlowSchema `%s` → priority level `%s`", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
			}
		}
		if i > 0 {
			out += ", "
		}
		out += name
	}
	return out
}

// chartRelease is the release name the chart's flow control is rendered
// with; its objects are <release>-sparklet-drivers.
const chartRelease = "bench"

// flowControlName is the chart's FlowSchema and priority level.
const flowControlName = chartRelease + "-sparklet-drivers"

// applyChartFlowControl renders the chart's FlowSchema and priority level
// with its default values for the driver ServiceAccount in ns, applies
// them, and waits until the API server classifies that account's requests
// with them.
func applyChartFlowControl(ctx context.Context, env *testenv.Env, o options, ns string) error {
	out, err := exec.CommandContext(ctx, o.bin+"/helm", "template", chartRelease, "charts/sparklet", "--namespace", "sparklet-system",
		"--kube-version", serverVersion(env), "--set", "flowControl.namespaces={"+ns+"}", "--show-only", "templates/flowcontrol.yaml").Output()
	if err != nil {
		return fmt.Errorf("helm template the chart's flow control: %w", errOutput(err))
	}
	if _, stderr, err := env.Kubectl(ctx, out, "apply", "--server-side", "--field-manager=bench", "-f", "-"); err != nil {
		return fmt.Errorf("apply the chart's flow control: %v: %s", err, stderr)
	}
	fs, err := env.Client.FlowcontrolV1().FlowSchemas().Get(ctx, flowControlName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	// The API server loads FlowSchemas asynchronously: ask it how it
	// classifies a request of the driver ServiceAccount.
	exp := int64(600)
	tok, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, testenv.DriverServiceAccount, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	admin := env.Cluster.RESTConfig()
	client, err := rest.HTTPClientFor(&rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin.Host+"/api/v1/namespaces/"+ns+"/pods?limit=1", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == string(fs.UID), nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not classify %s/%s with FlowSchema %s: %w", ns, testenv.DriverServiceAccount, flowControlName, err)
	}
	return nil
}

func errOutput(err error) error {
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

// levelSeats is each priority level's nominal seats and rejected requests.
func levelSeats(ms []sample) (seats, rejected map[string]float64) {
	seats, rejected = map[string]float64{}, map[string]float64{}
	for _, s := range ms {
		switch s.name {
		case "apiserver_flowcontrol_nominal_limit_seats":
			seats[s.labels["priority_level"]] = s.value
		case "apiserver_flowcontrol_rejected_requests_total":
			rejected[s.labels["priority_level"]] += s.value
		}
	}
	return seats, rejected
}

// observerIdle is the observer's idle window before the first burst.
const observerIdle = 20 * time.Second

// flowControlReport is the many-drivers section's part on the unrelated
// client.
func flowControlReport(ctx context.Context, env *testenv.Env, o options, r *report, idle, direct, viaSidecars, withAPF scaleResult) {
	settings := "kube-apiserver's default concurrency limits (`--max-requests-inflight 400 --max-mutating-requests-inflight 200`)"
	if f := apiServerFlags(o.apiServerSeats); f != nil {
		settings = fmt.Sprintf("`%s %s %s %s` (%d seats in all, sized for this machine's cores; the defaults are 400 and 200)", f[0], f[1], f[2], f[3], o.apiServerSeats)
	}
	r.line("### An unrelated client during the burst")
	r.line("")
	r.line("ServiceAccount `%s/%s` GETs a ResourceQuota and LISTs its namespace's ResourceQuotas in turn (left out of the API server's figures above), one request every %s, from %s before the first burst to the end. The API server classified its requests with %s. kube-apiserver ran with %s; API Priority and Fairness shares those seats among its priority levels: `workload-low` (every ServiceAccount's, the drivers' too without the FlowSchema) had %.0f nominal seats, the chart's `%s` %.0f, without borrowing (`borrowingLimitPercent: 0`).",
		observerNS, observerName, observerInterval, observerIdle, flowSchemaNames(ctx, env, idle.observed.flowSchemas), settings,
		withAPF.seats["workload-low"], flowControlName, withAPF.seats[flowControlName])
	r.line("")
	r.line("Where the client's time goes, from the API server's own figures for the window:")
	r.line("")
	r.line("- *queue wait*: `apiserver_flowcontrol_request_wait_duration_seconds` of every request that waited in `workload-low`'s queues, the part of the latency API Priority and Fairness adds;")
	r.line("- *server*: `apiserver_request_duration_seconds` of the client's own requests, from the API server receiving each to its answer (histogram bounds 5, 25, 50, 100 ms ..., interpolated);")
	r.line("- *kube-apiserver waiting for a CPU*: the time its threads spent runnable but not running (`/proc/<pid>/task/*/schedstat`), per second of the window: on these %d cores the API server shares the CPUs with etcd, kwok, kube-scheduler, the sidecars and the emulators, which on a cluster run on other machines. API Priority and Fairness bounds the requests each level executes at once, not the CPU the server gets.", runtime.NumCPU())
	r.line("")
	r.line("| window | requests | p50 | p99 | p99 / idle p99 | failed | queue wait p50 | queue wait p99 | server p50 | server p99 | kube-apiserver waiting for a CPU |")
	r.line("|---|---|---|---|---|---|---|---|---|---|---|")
	idleP99 := pct(idle.observed.lat, 0.99)
	line := func(name string, x scaleResult) {
		w := x.observed
		r.line("| %s | %d | %s | %s | %.2f× | %d | %s | %s | %s | %s | %.0f ms/s |", name, len(w.lat), pct(w.lat, 0.5), pct(w.lat, 0.99), float64(pct(w.lat, 0.99))/float64(idleP99), w.failed,
			secs(quantile(0.5, x.lowWait)), secs(quantile(0.99, x.lowWait)), secs(quantile(0.5, x.observerServer)), secs(quantile(0.99, x.observerServer)),
			1000*x.apiServerRunDelay/x.running.Seconds())
	}
	line("idle, before the bursts", idle)
	line("burst straight to the API server", direct)
	line("burst through sidecars, without the FlowSchema", viaSidecars)
	line("burst through sidecars, with the chart's FlowSchema", withAPF)
	r.line("")
	ratio := float64(pct(withAPF.observed.lat, 0.99)) / float64(idleP99)
	verdict := "met"
	if ratio > 1.5 {
		verdict = "missed"
	}
	r.line("- Target, with the FlowSchema the unrelated client's p99 during the burst at most 1.5× its idle p99: **%s** (%.2f×; %.2f× without it).",
		verdict, ratio, float64(pct(viaSidecars.observed.lat, 0.99))/float64(idleP99))
	r.line("- With the FlowSchema, all-Running comes %s than without it; the API server rejected %.0f of the drivers' requests with 429 (their queues were full; the sidecars' client retries them after Retry-After).",
		faster(viaSidecars.running, withAPF.running), withAPF.rejected[flowControlName])
	r.line("")
	apiServer := withAPF.apiServer
	apiServer.flat = true
	r.profiles(fmt.Sprintf("kube-apiserver during the burst through sidecars with the chart's FlowSchema, for %d s from its start", profileSeconds), apiServer)
	r.line("CPU seconds each process used from the burst's start to all-Running, against the machine's %d cores × that time (other work on the machine is not counted):", runtime.NumCPU())
	r.line("")
	procs := []string{"kube-apiserver", "etcd", "kwok", "kube-scheduler", "kube-controller-manager", "sidecars", "bench (emulators, observer)"}
	r.line("| burst | %s | all of these | available |", strings.Join(procs, " | "))
	r.line("|---|%s---|---|", strings.Repeat("---|", len(procs)))
	for _, run := range []struct {
		name string
		x    scaleResult
	}{{"straight to the API server", direct}, {"through sidecars, without the FlowSchema", viaSidecars}, {"through sidecars, with the chart's FlowSchema", withAPF}} {
		cells := make([]string, len(procs))
		for i, p := range procs {
			cells[i] = fmt.Sprintf("%.1f", run.x.cpu[p])
		}
		r.line("| %s | %s | %.1f | %.1f |", run.name, strings.Join(cells, " | "), sum(run.x.cpu), run.x.running.Seconds()*float64(runtime.NumCPU()))
	}
	r.line("")
}

// withoutObserver leaves the observer's requests out of the API server's
// metrics.
func withoutObserver(ms []sample) []sample {
	out := ms[:0:0]
	for _, s := range ms {
		if s.labels["resource"] != observerResource {
			out = append(out, s)
		}
	}
	return out
}

// cpuSeconds is the CPU time each process has used so far: the control
// plane's by name, the sidecars' together, and this process's (the
// driver emulators and the observer).
func cpuSeconds(env *testenv.Env, sidecars []*testenv.Sidecar) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range env.Cluster.PIDs() {
		_, out[name] = procStats(pid)
	}
	for _, sc := range sidecars {
		if sc != nil {
			_, cpu := procStats(sc.PID())
			out["sidecars"] += cpu
		}
	}
	_, out["bench (emulators, observer)"] = procStats(os.Getpid())
	return out
}

// driverToken grants the namespace's default ServiceAccount what Spark's
// driver needs (driverAccount) and returns a REST config that
// authenticates as it: drivers straight to the API server are then
// classified as real ones are (service-accounts → workload-low), not
// exempt as the admin is.
func driverToken(ctx context.Context, env *testenv.Env, ns string) (*rest.Config, error) {
	if err := driverAccount(ctx, env, ns); err != nil {
		return nil, fmt.Errorf("driver account in %s: %w", ns, err)
	}
	exp := int64(3600)
	tok, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/default: %w", ns, err)
	}
	admin := env.Cluster.RESTConfig()
	return &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}}, nil
}

// observerLatency is the API server's latency histogram for the
// observer's requests.
func observerLatency(ms []sample) map[float64]float64 {
	return buckets(ms, "apiserver_request_duration_seconds", func(l map[string]string) bool {
		return l["resource"] == observerResource && l["verb"] != "WATCH"
	})
}

// runDelay is the seconds the threads of process pid have spent runnable
// but waiting for a CPU (the second field of each thread's schedstat).
func runDelay(pid int) float64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	total := 0.0
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(data)); len(f) >= 2 {
			ns, _ := strconv.ParseFloat(f[1], 64)
			total += ns / 1e9
		}
	}
	return total
}

// lowWait is the queue-wait histogram of workload-low, the observer's
// priority level, for the requests that executed.
func lowWait(ms []sample) map[float64]float64 {
	return buckets(ms, "apiserver_flowcontrol_request_wait_duration_seconds", func(l map[string]string) bool {
		return l["priority_level"] == "workload-low" && l["execute"] == "true"
	})
}
