package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/webhookconfig"
)

type options struct {
	bin, dir, out string
	executors     int
	idle, steady  time.Duration
	admissions    int
	drivers       int
	perDriver     int
	sections      string
	schedulerQPS  int
	// apiServerSeats is kube-apiserver's concurrency in all; 0 keeps its
	// defaults.
	apiServerSeats int
	// sidecarExecutors are the executor counts of the sidecar section.
	sidecarExecutors []int
	// sidecarIdle is how long the sidecar section watches each sidecar
	// idle once its executors run.
	sidecarIdle time.Duration
}

// validate names the flag at fault.
func (o options) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"--executors", o.executors}, {"--admissions", o.admissions}, {"--drivers", o.drivers}, {"--executors-per-driver", o.perDriver}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", f.name, f.v))
		}
	}
	if o.idle <= 0 || o.steady <= 0 {
		errs = append(errs, fmt.Errorf("--idle and --steady must be positive, got %s and %s", o.idle, o.steady))
	}
	if o.apiServerSeats < 0 || (o.apiServerSeats > 0 && o.apiServerSeats < 3) {
		errs = append(errs, fmt.Errorf("--apiserver-seats must be 0 (kube-apiserver's defaults) or at least 3, got %d", o.apiServerSeats))
	}
	if len(o.sidecarExecutors) == 0 {
		errs = append(errs, fmt.Errorf("--sidecar-executors must list at least one count, such as 0,100,1000"))
	}
	for _, n := range o.sidecarExecutors {
		if n < 0 {
			errs = append(errs, fmt.Errorf("--sidecar-executors: each count must be 0 or more, got %d", n))
		}
	}
	if o.sidecarIdle <= 0 {
		errs = append(errs, fmt.Errorf("--sidecar-idle must be positive, got %s", o.sidecarIdle))
	}
	if o.schedulerQPS < 0 {
		errs = append(errs, fmt.Errorf("--scheduler-qps must not be negative (0 keeps kube-scheduler's default), got %d", o.schedulerQPS))
	}
	if o.sections != "all" {
		for _, s := range strings.Split(o.sections, ",") {
			if !slices.Contains(sectionNames, s) {
				errs = append(errs, fmt.Errorf("--sections: unknown section %q; use all or a comma-separated list of %s", s, strings.Join(sectionNames, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

var sectionNames = []string{"webhook", "create", "allocation", "jvm", "scale", "sidecar"}

func (o options) runs(section string) bool {
	return o.sections == "all" || strings.Contains(","+o.sections+",", ","+section+",")
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == nodeCommand {
		if err := nodeMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench node:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == connectCommand {
		if err := connectMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench connect:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == e2eCommand {
		if err := e2eMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench e2e:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == startCommand {
		if err := startMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench start:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == nullWebhookCommand {
		if err := nullWebhookMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench null-webhook:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "sparklet and control-plane binaries")
	flag.StringVar(&o.dir, "dir", ".cache/bench", "state and logs")
	flag.StringVar(&o.out, "out", "bench/results", "where latest.md and the chart go")
	flag.IntVar(&o.executors, "executors", 1000, "executors per allocation contender")
	flag.DurationVar(&o.idle, "idle", time.Minute, "idle window after the allocation runs of (b), (c), (b-jvm) and (c-jvm)")
	flag.DurationVar(&o.sidecarIdle, "sidecar-idle", 30*time.Second, "idle window of each sidecar in the sidecar section, once its executors run")
	flag.DurationVar(&o.steady, "steady", 40*time.Second, "steady window after each side of the many-drivers comparison (its requests are reported per minute)")
	flag.IntVar(&o.admissions, "admissions", 6000, "requests per webhook load level, to sparklet's webhook and to the null webhook each")
	flag.IntVar(&o.drivers, "drivers", 50, "drivers at once in the scale comparison")
	flag.IntVar(&o.perDriver, "executors-per-driver", 20, "executors per driver in the scale comparison")
	flag.IntVar(&o.schedulerQPS, "scheduler-qps", 0, "kube-scheduler's --kube-api-qps (burst twice that); 0 keeps its default of 50, which paces pods to Running")
	flag.IntVar(&o.apiServerSeats, "apiserver-seats", 60, "kube-apiserver's concurrency limit in all (two thirds --max-requests-inflight, one third --max-mutating-requests-inflight), which API Priority and Fairness shares among its priority levels; 0 keeps its defaults of 400 and 200")
	flag.StringVar(&o.sections, "sections", "all", "comma-separated sections to run: webhook, create, allocation, jvm, scale, sidecar (a partial run does not write the chart)")
	flag.Func("sidecar-executors", "comma-separated executor counts of the sidecar section (default 0,100,1000,5000)", func(v string) error {
		o.sidecarExecutors = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("%q is not a count", f)
			}
			o.sidecarExecutors = append(o.sidecarExecutors, n)
		}
		return nil
	})
	o.sidecarExecutors = []int{0, 100, 1000, 5000}
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type report struct {
	b strings.Builder
}

func (r *report) line(format string, args ...any) {
	fmt.Fprintf(&r.b, format+"\n", args...)
	fmt.Printf(format+"\n", args...)
}

// table writes a Markdown table: its header, the separator and rows, then
// a blank line.
func (r *report) table(header string, rows []string) {
	r.line("%s", header)
	r.line("|%s", strings.Repeat("---|", strings.Count(header, "|")-1))
	for _, l := range rows {
		r.line("%s", l)
	}
	r.line("")
}

func run(o options) error {
	ctx := context.Background()
	o.bin, _ = filepath.Abs(o.bin)
	o.dir, _ = filepath.Abs(o.dir)
	// The sidecars measured are the image's: sparklet hands over to the
	// sidecar-only build next to it.
	if _, err := os.Stat(filepath.Join(o.bin, "sparklet-sidecar")); err != nil {
		return fmt.Errorf("%w: make build builds it", err)
	}
	_ = os.RemoveAll(o.dir)
	policy, _ := filepath.Abs("bench/policy.yaml")
	// The real drivers of the jvm section run on the pod runner's node,
	// their executors on kwok's.
	env, err := testenv.Start(ctx, testenv.Options{BinDir: o.bin, Dir: o.dir, PolicyFile: policy, WebhookArgs: []string{"--profiling"}, SchedulerFlags: schedulerFlags(o.schedulerQPS),
		APIServerFlags: append(apiServerFlags(o.apiServerSeats), apiServerProfiling),
		PodRunner:      o.runs("jvm"), Kwok: true})
	if err != nil {
		return err
	}
	defer env.Stop()
	r := &report{}
	r.line("# sparklet benchmarks")
	r.line("")
	r.line("%s; %d CPUs (%s/%s), %s; Kubernetes %s (local control plane, kwok nodes); sparklet %s.",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(),
		serverVersion(env), gitVersion())
	r.line("Reproduce: `make bench` (options: `go run ./bench -h`). Absolute times depend on the machine; ratios are measured side by side in this run.")
	if o.schedulerQPS > 0 {
		r.line("kube-scheduler ran with `--kube-api-qps %d --kube-api-burst %d` (its default is 50 and 100).", o.schedulerQPS, 2*o.schedulerQPS)
	} else {
		r.line("kube-scheduler ran with its default client limit, 50 requests/s: it binds at most about 50 pods per second, as in a cluster with default settings.")
	}
	r.line("")

	if o.runs("webhook") {
		if err := webhookLoad(ctx, env, o, r); err != nil {
			return err
		}
	}
	if o.runs("create") {
		if err := createLatency(ctx, env, o, r); err != nil {
			return err
		}
	}
	var series []result
	if o.runs("allocation") {
		if series, err = allocation(ctx, env, o, r); err != nil {
			return err
		}
	}
	if o.runs("jvm") {
		jvm, err := jvmAllocation(ctx, env, o, r, series)
		if err != nil {
			return err
		}
		series = append(series, jvm...)
	}
	if o.runs("scale") {
		if err := scale(ctx, env, o, r); err != nil {
			return err
		}
	}
	if o.runs("sidecar") {
		if err := sidecarMemory(ctx, env, o, r); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if len(series) > 0 {
		if err := chart(series, filepath.Join(o.out, "allocation.png")); err != nil {
			return err
		}
		r.line("![executors Running over time](allocation.png)")
	}
	name := "latest.md"
	if o.sections != "all" {
		name = "partial.md"
	}
	return os.WriteFile(filepath.Join(o.out, name), []byte(r.b.String()), 0o644)
}

func schedulerFlags(qps int) []string {
	if qps <= 0 {
		return nil
	}
	return []string{"--kube-api-qps", strconv.Itoa(qps), "--kube-api-burst", strconv.Itoa(2 * qps)}
}

func serverVersion(env *testenv.Env) string {
	v, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		return "?"
	}
	return v.GitVersion
}

func gitVersion() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "dev"
	}
	return strings.TrimSpace(string(out))
}

// ---- 1. webhook admission over HTTPS ----

// benchPods are the driver pods the webhook is loaded with.
var benchPods = []struct{ name, file string }{
	{"examples/spark-pi-pod.yaml", "examples/spark-pi-pod.yaml"},
	{"examples/pyspark-pod.yaml", "examples/pyspark-pod.yaml"},
	{"large (20 env, 10 volumes, 3 containers)", "webhook/testdata/large.pod.yaml"},
}

func admissionReview(file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	podJSON, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"b","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"namespace":"bench","operation":"CREATE","object":%s}}`, podJSON), nil
}

func webhookLoad(ctx context.Context, env *testenv.Env, o options, r *report) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 128}} //nolint:gosec // loopback load
	base := "https://" + env.Addr()
	nullBase, nullPID, stopNull, err := startNullWebhook(ctx, client, env.CertFile(), env.KeyFile(), filepath.Join(o.dir, "null-webhook.log"))
	if err != nil {
		return err
	}
	defer stopNull()
	typedBase, typedPID, stopTyped, err := startNullWebhook(ctx, client, env.CertFile(), env.KeyFile(), filepath.Join(o.dir, "typed-noop-webhook.log"), "--typed")
	if err != nil {
		return err
	}
	defer stopTyped()
	r.line("## 1. Webhook admission")
	r.line("")
	r.line("Driver pods POSTed as AdmissionReviews over HTTPS on loopback to `sparklet webhook` and, side by side in this run, to a null webhook (`bench/nullwebhook.go`: a process of its own with the same certificate that decodes the AdmissionReview and allows it with no patch). %d requests per row and webhook, after a warm-up; the two take turns going first. Client-side latency includes TLS and HTTP; the server-side percentiles are read from the webhook's own histogram `sparklet_admission_duration_seconds` (bucket bounds, interpolated). Ratios are sparklet / null.", o.admissions)
	r.line("")
	inProcess(r)
	r.line("| pod | concurrency | null req/s | sparklet req/s | **throughput ratio** | null p50 | sparklet p50 | **p50 ratio** | null p99 | sparklet p99 | **p99 ratio** | sparklet p99.9 | server p50 | server p99 |")
	r.line("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var profiledReview string // the first example pod's, which the targets name
	var verdicts []string
	var floor, answered []string
	for p, pod := range benchPods {
		review, err := admissionReview(pod.file)
		if err != nil {
			return err
		}
		if profiledReview == "" {
			profiledReview = review
		}
		answerBase, stopAnswer, err := startAnswering(ctx, client, env, base, review, filepath.Join(o.dir, fmt.Sprintf("answer-%d", p)))
		if err != nil {
			return fmt.Errorf("%s: %w", pod.name, err)
		}
		defer stopAnswer()
		for i, conc := range []int{1, 16, 64} {
			var null, typed, canned, ours load
			var before map[float64]float64
			runs := []func() error{
				func() (err error) {
					null, err = measure(ctx, client, nullBase+"/", review, false, conc, o.admissions)
					return err
				},
				func() (err error) {
					typed, err = measure(ctx, client, typedBase+"/", review, false, conc, o.admissions)
					return err
				},
				func() (err error) {
					canned, err = measure(ctx, client, answerBase+"/", review, true, conc, o.admissions)
					return err
				},
				func() (err error) {
					before = admissionBuckets(ctx, client, base)
					ours, err = measure(ctx, client, base+"/mutate-pods", review, true, conc, o.admissions)
					return err
				},
			}
			if i%2 == 1 {
				slices.Reverse(runs)
			}
			for _, run := range runs {
				if err := run(); err != nil {
					return fmt.Errorf("%s at concurrency %d: %w", pod.name, conc, err)
				}
			}
			server := diff(admissionBuckets(ctx, client, base), before)
			sec := func(q float64) time.Duration {
				return time.Duration(quantile(q, server) * float64(time.Second)).Round(time.Microsecond)
			}
			tput, p50, p99 := ours.rate/null.rate, ratio(ours.p(0.5), null.p(0.5)), ratio(ours.p(0.99), null.p(0.99))
			r.line("| %s | %d | %.0f | %.0f | **%.2f×** | %s | %s | **%.2f×** | %s | %s | **%.2f×** | %s | %s | %s |", pod.name, conc,
				null.rate, ours.rate, tput, null.p(0.5), ours.p(0.5), p50, null.p(0.99), ours.p(0.99), p99, ours.p(0.999), sec(0.5), sec(0.99))
			floor = append(floor, fmt.Sprintf("| %s | %d | %.0f | %.0f | **%.2f×** | %s | **%.2f×** | %s | **%.2f×** | **%.2f×** |", pod.name, conc,
				null.rate, typed.rate, typed.rate/null.rate, typed.p(0.5), ratio(typed.p(0.5), null.p(0.5)), typed.p(0.99), ratio(typed.p(0.99), null.p(0.99)), ours.rate/typed.rate))
			answered = append(answered, fmt.Sprintf("| %s | %d | %.0f | %.0f | **%.2f×** | %s | **%.2f×** | %s | **%.2f×** | **%.2f×** | **%.2f×** |", pod.name, conc,
				null.rate, canned.rate, canned.rate/null.rate, canned.p(0.5), ratio(canned.p(0.5), null.p(0.5)), canned.p(0.99), ratio(canned.p(0.99), null.p(0.99)),
				ours.rate/canned.rate, ratio(ours.p(0.5), canned.p(0.5))))
			if strings.HasPrefix(pod.name, "examples/") {
				switch conc {
				case 1:
					verdicts = append(verdicts, verdict(fmt.Sprintf("%s at concurrency 1: p50 %.2f× (target at most 2×)", pod.name, p50), p50 <= 2))
				case 16:
					verdicts = append(verdicts, verdict(fmt.Sprintf("%s at concurrency 16: throughput %.2f× (target at least 0.6×), p99 %.2f× (target at most 2×)", pod.name, tput, p99), tput >= 0.6 && p99 <= 2))
				}
			}
		}
	}
	r.line("")
	for _, v := range verdicts {
		r.line("- %s", v)
	}
	r.line("")
	r.line("The floor of a mutating webhook that decodes the pod into its Go type, measured in the same runs: a typed no-op (`bench null-webhook --typed`), written as controller-runtime's defaulting webhook is, decodes the AdmissionReview and the pod, encodes the pod again and answers the JSON patch between the two (`jsonpatch.CreatePatch`), changing nothing. Ratios are the typed no-op / null, and sparklet / the typed no-op.")
	r.line("")
	r.table("| pod | concurrency | null req/s | typed no-op req/s | **typed no-op throughput / null** | typed no-op p50 | **p50 / null** | typed no-op p99 | **p99 / null** | **sparklet throughput / typed no-op** |", floor)
	r.line("What carrying sparklet's answer costs, measured in the same runs: a null webhook that answers every request with sparklet's own JSON patch for that pod (`bench null-webhook --answer`, the patch taken from sparklet before the rows), encoded in the AdmissionReview as sparklet encodes it, with none of the work of computing it. Its ratio to the null webhook is the best any webhook answering this patch can reach on this machine; sparklet / canned is what the work itself costs.")
	r.line("")
	r.table("| pod | concurrency | null req/s | canned answer req/s | **canned throughput / null** | canned p50 | **p50 / null** | canned p99 | **p99 / null** | **sparklet throughput / canned** | **sparklet p50 / canned** |", answered)
	patch, err := os.ReadFile(filepath.Join(o.dir, "answer-0.json"))
	if err != nil {
		return err
	}
	if err := reportPatchParts(r, benchPods[0].name, patch); err != nil {
		return err
	}
	ourRSS, _ := procStats(env.WebhookPID())
	nullRSS, _ := procStats(nullPID)
	typedRSS, _ := procStats(typedPID)
	r.line("Peak RSS (`VmHWM`) after all the rows above: sparklet webhook **%.1f MiB** (GOGC 400 and no GOMEMLIMIT; the chart's, set from the memory limit, binds only near it), null %.1f MiB, typed no-op %.1f MiB (both run in the bench's own, larger binary).",
		ourRSS/1024, nullRSS/1024, typedRSS/1024)
	r.line("")
	// Profile the webhook under the first example pod at concurrency 16.
	loadCtx, stop := context.WithTimeout(ctx, time.Duration(profileSeconds+2)*time.Second)
	defer stop()
	profiled := takeProfiles(ctx, client, base, o.out+"/profiles", "webhook", profileSeconds)
	if _, _, err := hammer(loadCtx, client, base+"/mutate-pods", profiledReview, true, 16, 0); err != nil {
		return err
	}
	r.profiles(fmt.Sprintf("The webhook admitting %s at concurrency 16 for %d s", benchPods[0].name, profileSeconds), profiled())
	return nil
}

// startAnswering asks the webhook at base for its patch to review, writes
// it to file and starts a null webhook that answers it to every request.
func startAnswering(ctx context.Context, client *http.Client, env *testenv.Env, base, review, file string) (string, func(), error) {
	body, err := admitBody(ctx, client, base+"/mutate-pods", review)
	if err != nil {
		return "", nil, err
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil || out.Response == nil || len(out.Response.Patch) == 0 {
		return "", nil, fmt.Errorf("no patch from sparklet to answer with: %v: %s", err, body)
	}
	if err := os.WriteFile(file+".json", out.Response.Patch, 0o644); err != nil {
		return "", nil, err
	}
	answerBase, _, stop, err := startNullWebhook(ctx, client, env.CertFile(), env.KeyFile(), file+".log", "--answer", file+".json")
	return answerBase, stop, err
}

// load is one measured run of admissions.
type load struct {
	lat  []time.Duration // sorted
	rate float64         // requests per second
}

func (l load) p(q float64) time.Duration { return pct(l.lat, q) }

// measure warms the webhook at url up with conc connections, then sends
// it n reviews from conc workers.
func measure(ctx context.Context, client *http.Client, url, review string, wantPatch bool, conc, n int) (load, error) {
	if _, _, err := hammer(ctx, client, url, review, wantPatch, conc, max(200, 10*conc)); err != nil {
		return load{}, fmt.Errorf("warm-up: %w", err)
	}
	lat, elapsed, err := hammer(ctx, client, url, review, wantPatch, conc, n)
	if err != nil {
		return load{}, err
	}
	return load{lat: lat, rate: float64(len(lat)) / elapsed.Seconds()}, nil
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func verdict(what string, met bool) string {
	if met {
		return what + ": met."
	}
	return what + ": **missed**."
}

// inProcess runs the webhook's Go benchmark (the handler without HTTP or
// TLS) and reports its lines.
func inProcess(r *report) {
	out, err := exec.Command("go", "test", "./webhook", "-run", "XXX", "-bench", "BenchmarkAdmit", "-benchmem", "-benchtime", "2000x").CombinedOutput()
	if err != nil {
		r.line("In-process benchmark failed: %v", err)
		r.line("")
		return
	}
	r.line("In process (`go test ./webhook -run XXX -bench BenchmarkAdmit -benchmem -benchtime 2000x`), one admission of:")
	r.line("")
	r.line("| pod | time/op | bytes/op | allocs/op |")
	r.line("|---|---|---|---|")
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 8 && strings.HasPrefix(f[0], "BenchmarkAdmit/") {
			name := strings.TrimPrefix(f[0], "BenchmarkAdmit/")
			if i := strings.LastIndex(name, "-"); i > 0 {
				name = name[:i]
			}
			ns, _ := strconv.ParseFloat(f[2], 64)
			r.line("| %s | %s | %s B | %s |", name, time.Duration(ns).Round(time.Microsecond), f[4], f[6])
		}
	}
	r.line("")
	r.line("Over HTTPS:")
	r.line("")
}

// hammer POSTs body to url from conc workers, n times in all, or until
// ctx ends when n is 0, and returns the sorted client-side latencies.
// Every answer must allow the pod, with a patch when wantPatch.
func hammer(ctx context.Context, client *http.Client, url, body string, wantPatch bool, conc, n int) ([]time.Duration, time.Duration, error) {
	var (
		mu       sync.Mutex
		lat      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	next := 0
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				if (n > 0 && next >= n) || firstErr != nil {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				t0 := time.Now()
				err := admit(ctx, client, url, body, wantPatch)
				d := time.Since(t0)
				mu.Lock()
				if err != nil && ctx.Err() == nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, time.Since(start), firstErr
}

func admit(ctx context.Context, client *http.Client, url, body string, wantPatch bool) error {
	out, err := admitBody(ctx, client, url, body)
	switch {
	case err != nil:
		return err
	case !bytes.Contains(out, []byte(`"allowed":true`)):
		return fmt.Errorf("not allowed: %s", out)
	case wantPatch && !bytes.Contains(out, []byte(`"patch"`)):
		return fmt.Errorf("no patch in %s", out)
	}
	return nil
}

// admitBody POSTs one AdmissionReview and returns the answer's body.
func admitBody(ctx context.Context, client *http.Client, url, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return buf.Bytes(), err
}

// admissionBuckets reads the webhook's admission latency histogram.
func admissionBuckets(ctx context.Context, client *http.Client, base string) map[float64]float64 {
	return buckets(scrape(ctx, client, base+"/metrics"), "sparklet_admission_duration_seconds", nil)
}

// pct is the p-quantile of sorted latencies.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))].Round(time.Microsecond)
}

// ---- 2. pod create latency through the API server ----

// cannedLabel opts a namespace in to the canned-answer webhook of the
// create section, registered as sparklet's is but for this label.
const cannedLabel = "bench.sparklet.io/canned"

func createLatency(ctx context.Context, env *testenv.Env, o options, r *report) error {
	const n = 100
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback
	stopCanned, err := registerCanned(ctx, env, client, o.dir)
	if err != nil {
		return fmt.Errorf("the canned-answer webhook: %w", err)
	}
	defer stopCanned()
	namespaces := []string{"bench-plain", "bench-canned", "bench-injected"}
	if err := env.CreateNamespace(ctx, namespaces[0], false); err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, namespaces[2], true); err != nil {
		return err
	}
	lat := make([][]time.Duration, len(namespaces))
	order := []int{0, 1, 2}
	for i := 0; i < n; i++ {
		for _, k := range order {
			pod := driverPod(fmt.Sprintf("d-%d", i))
			t0 := time.Now()
			if _, err := env.Client.CoreV1().Pods(namespaces[k]).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create in %s: %w", namespaces[k], err)
			}
			lat[k] = append(lat[k], time.Since(t0))
		}
		order = append(order[1:], order[0]) // each goes first in turn
	}
	for _, l := range lat {
		slices.Sort(l)
	}
	plain, canned, injected := lat[0], lat[1], lat[2]
	r.line("## 2. Driver pod create latency through kube-apiserver")
	r.line("")
	r.line("%d sequential creates of the example driver pod in each of three namespaces, taking turns: one that has not opted in (no webhook call), one whose pods go to the canned-answer webhook (`bench null-webhook --answer` with sparklet's own patch for this pod, registered as sparklet's webhook is: the same rules, object selector, failure policy, timeout and reinvocation policy, for another namespace label), and one that has opted in to sparklet. The canned answer is what the API server's calling of any webhook and applying this patch costs; sparklet / canned is what sparklet's work adds to a create.", n)
	r.line("")
	r.line("| | p50 | p99 | p50 / no webhook | p99 / no webhook |")
	r.line("|---|---|---|---|---|")
	for _, row := range []struct {
		name string
		l    []time.Duration
	}{{"without a webhook", plain}, {"the canned answer", canned}, {"sparklet's webhook", injected}} {
		r.line("| %s | %s | %s | %.2f× | %.2f× |", row.name, pct(row.l, 0.5), pct(row.l, 0.99), ratio(pct(row.l, 0.5), pct(plain, 0.5)), ratio(pct(row.l, 0.99), pct(plain, 0.99)))
	}
	r.line("| **sparklet / canned** | **%.2f×** | **%.2f×** | | |", ratio(pct(injected, 0.5), pct(canned, 0.5)), ratio(pct(injected, 0.99), pct(canned, 0.99)))
	r.line("")
	patch, err := os.ReadFile(filepath.Join(o.dir, "canned-create.json"))
	if err != nil {
		return err
	}
	if err := reportPatchParts(r, "this pod", patch); err != nil {
		return err
	}
	p50 := ratio(pct(injected, 0.5), pct(canned, 0.5))
	r.line("- %s", verdict(fmt.Sprintf("sparklet's create p50 %.2f× the canned answer's (target at most 1.2×)", p50), p50 <= 1.2))
	r.line("")
	return nil
}

// registerCanned creates namespace bench-canned, starts a canned-answer
// webhook that answers sparklet's patch for driverPod as the API server
// sends it there, registers it as sparklet's webhook is registered, for
// namespaces labelled cannedLabel, labels the namespace and waits until
// the API server calls it.
func registerCanned(ctx context.Context, env *testenv.Env, client *http.Client, dir string) (stop func(), err error) {
	const ns = "bench-canned"
	if err := env.CreateNamespace(ctx, ns, false); err != nil {
		return nil, err
	}
	// The patched pod runs as the driver's service account.
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: testenv.DriverServiceAccount}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	// The pod as the API server sends it to a webhook: defaulted, and with
	// the service account admission plugin's token volume, which sparklet
	// takes out again. The fields set only after admission are cleared.
	sent, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod("d-0"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, err
	}
	sent.UID, sent.ResourceVersion, sent.CreationTimestamp = "", "", metav1.Time{}
	podJSON, err := json.Marshal(sent)
	if err != nil {
		return nil, err
	}
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"c","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"namespace":%q,"operation":"CREATE","object":%s}}`, ns, podJSON)
	base, stop, err := startAnswering(ctx, client, env, "https://"+env.Addr(), review, filepath.Join(dir, "canned-create"))
	if err != nil {
		return nil, err
	}
	caPEM, _ := env.Cluster.CA()
	url := base + "/"
	mwc := webhookconfig.Build("bench-canned", admissionregv1.WebhookClientConfig{URL: &url, CABundle: caPEM}, []string{testenv.WebhookNamespace, "kube-system"})
	mwc.Webhooks[0].Name = "canned.bench.sparklet.io"
	mwc.Webhooks[0].NamespaceSelector.MatchLabels = map[string]string{cannedLabel: "enabled"}
	if _, err := env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		stop()
		return nil, err
	}
	nsObj, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		nsObj.Labels[cannedLabel] = "enabled"
		_, err = env.Client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{})
	}
	if err != nil {
		stop()
		return nil, err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().Pods(ns).Create(ctx, driverPod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		last = err
		return err == nil && len(got.Spec.InitContainers) > 0, nil
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("the API server does not call it (last error: %v): %w", last, err)
	}
	return stop, nil
}

func driverPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"spark-role": "driver"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark", Image: "apache/spark:3.5.4", Args: []string{"driver", "local:///opt/spark/examples/jars/spark-examples.jar"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
		}}},
	}
}
