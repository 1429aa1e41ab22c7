// Command bench is `make bench`: it measures sparklet on the local control
// plane against Spark's defaults and the raw API server, side by side in one
// run, and writes bench/results/latest.md and a PNG chart. Timings depend
// on the machine; compare the ratios.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/internal/testenv"
)

type options struct {
	bin, dir, out string
	executors     int
	idle          time.Duration
	admissions    int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "sparklet and control-plane binaries")
	flag.StringVar(&o.dir, "dir", ".cache/bench", "state and logs")
	flag.StringVar(&o.out, "out", "bench/results", "where latest.md and the chart go")
	flag.IntVar(&o.executors, "executors", 1000, "executors per allocation contender")
	flag.DurationVar(&o.idle, "idle", time.Minute, "idle window after each allocation run")
	flag.IntVar(&o.admissions, "admissions", 2000, "requests per webhook load level")
	flag.Parse()
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

func run(o options) error {
	ctx := context.Background()
	o.bin, _ = filepath.Abs(o.bin)
	o.dir, _ = filepath.Abs(o.dir)
	_ = os.RemoveAll(o.dir)
	policy, _ := filepath.Abs("bench/policy.yaml")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: o.bin, Dir: o.dir, PolicyFile: policy})
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
	r.line("")

	if err := webhookLoad(ctx, env, o, r); err != nil {
		return err
	}
	if err := createLatency(ctx, env, r); err != nil {
		return err
	}
	series, err := allocation(ctx, env, o, r)
	if err != nil {
		return err
	}
	if err := chart(series, filepath.Join(o.out, "allocation.png")); err != nil {
		return err
	}
	r.line("")
	r.line("![executors Running over time](allocation.png)")
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "latest.md"), []byte(r.b.String()), 0o644)
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

func webhookLoad(ctx context.Context, env *testenv.Env, o options, r *report) error {
	raw, err := os.ReadFile("examples/spark-pi-pod.yaml")
	if err != nil {
		return err
	}
	podJSON, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return err
	}
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"b","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"namespace":"bench","operation":"CREATE","object":%s}}`, podJSON)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 128}} //nolint:gosec // loopback load
	url := "https://" + env.Addr() + "/mutate-pods"
	r.line("## 1. Webhook admission")
	r.line("")
	r.line("The example driver pod, POSTed as an AdmissionReview to `sparklet webhook` over HTTPS on loopback; %d requests per level. Client-side latency includes TLS and HTTP. The in-process cost is `go test ./webhook -bench .`.", o.admissions)
	r.line("")
	r.line("| concurrency | requests/s | p50 | p99 | p99.9 | server mean |")
	r.line("|---|---|---|---|---|---|")
	for _, conc := range []int{1, 16, 64} {
		before := scrape(client, "https://"+env.Addr()+"/metrics", "sparklet_admission_duration_seconds_sum", "sparklet_admission_duration_seconds_count")
		lat := make([]time.Duration, o.admissions)
		var next int64
		var mu sync.Mutex
		start := time.Now()
		var wg sync.WaitGroup
		var firstErr error
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if int(i) >= o.admissions {
						return
					}
					t0 := time.Now()
					resp, err := client.Post(url, "application/json", strings.NewReader(review))
					if err == nil {
						var buf bytes.Buffer
						_, _ = buf.ReadFrom(resp.Body)
						resp.Body.Close()
						if !strings.Contains(buf.String(), `"patch"`) {
							err = fmt.Errorf("no patch in %s", buf.String())
						}
					}
					if err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
					lat[i] = time.Since(t0)
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		elapsed := time.Since(start)
		after := scrape(client, "https://"+env.Addr()+"/metrics", "sparklet_admission_duration_seconds_sum", "sparklet_admission_duration_seconds_count")
		mean := time.Duration((after[0] - before[0]) / (after[1] - before[1]) * float64(time.Second))
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		r.line("| %d | %.0f | %s | %s | %s | %s |", conc, float64(o.admissions)/elapsed.Seconds(), q(lat, 0.5), q(lat, 0.99), q(lat, 0.999), mean.Round(time.Microsecond))
	}
	r.line("")
	return nil
}

func q(sorted []time.Duration, p float64) time.Duration {
	return sorted[int(p*float64(len(sorted)-1))].Round(time.Microsecond)
}

// scrape reads plain (unlabelled) samples from a Prometheus endpoint.
func scrape(client *http.Client, url string, names ...string) []float64 {
	out := make([]float64, len(names))
	resp, err := client.Get(url)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for i, n := range names {
			if strings.HasPrefix(sc.Text(), n+" ") {
				out[i], _ = strconv.ParseFloat(strings.TrimPrefix(sc.Text(), n+" "), 64)
			}
		}
	}
	return out
}

// ---- 2. pod create latency through the API server ----

func createLatency(ctx context.Context, env *testenv.Env, r *report) error {
	const n = 100
	measure := func(ns string, optIn bool) ([]time.Duration, error) {
		if err := env.CreateNamespace(ctx, ns, optIn); err != nil {
			return nil, err
		}
		var lat []time.Duration
		for i := 0; i < n; i++ {
			pod := driverPod(fmt.Sprintf("d-%d", i))
			t0 := time.Now()
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t0))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat, nil
	}
	plain, err := measure("bench-plain", false)
	if err != nil {
		return err
	}
	injected, err := measure("bench-injected", true)
	if err != nil {
		return err
	}
	r.line("## 2. Driver pod create latency through kube-apiserver")
	r.line("")
	r.line("%d sequential creates of the example driver pod, in a namespace that has not opted in (no webhook call) and in one that has.", n)
	r.line("")
	r.line("| | p50 | p99 |")
	r.line("|---|---|---|")
	r.line("| without the webhook | %s | %s |", q(plain, 0.5), q(plain, 0.99))
	r.line("| with the webhook | %s | %s |", q(injected, 0.5), q(injected, 0.99))
	r.line("| **ratio** | **%.2f×** | **%.2f×** |", float64(q(injected, 0.5))/float64(q(plain, 0.5)), float64(q(injected, 0.99))/float64(q(plain, 0.99)))
	r.line("")
	return nil
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
