package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// startCommand is `bench start`: the time from a driver pod's scheduling
// to its Spark container's first process, with sparklet and without it
// (a namespace that has not opted in), side by side in one run, on the
// pod runner and, with --node, on the real node.
const startCommand = "start"

const (
	startOptedIn = "start-sparklet"
	startPlain   = "start-plain"
	// startMarker is the Spark container's whole command: it prints the
	// time its process began, in seconds with nanoseconds, and exits. What
	// runs after it (the JVM) is the same with and without sparklet, so it
	// is left out.
	startMarker = "date +%s.%N"
)

// startPlace is one cluster the pods start on, with the start latencies
// measured there.
type startPlace struct {
	name string
	pods kubernetes.Interface
	// logs reads the Spark container's log of the pod ns/name.
	logs            func(ctx context.Context, ns, name string) ([]byte, error)
	sparklet, plain []time.Duration
	// containerdLog, on the real node, is containerd's log, which times
	// the pod's sandbox and the Spark container's create to the
	// nanosecond (runtimeSpans).
	containerdLog                 string
	sparkletRuntime, plainRuntime []time.Duration
}

func startMain(args []string) error {
	fs := flag.NewFlagSet("bench start", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "sparklet, the control plane's binaries, spark/ and, with --node, the node's binaries and images/")
	dir := fs.String("dir", ".cache/bench-start", "state and logs")
	out := fs.String("out", "bench/results", "where start.md goes")
	n := fs.Int("n", 10, "pods started in each namespace on each side, taking turns")
	onNode := fs.Bool("node", false, "measure on the real node too (docs/real-node.md; it waits for any other real node on the machine)")
	if err := parseCounted(fs, args, "-n", n); err != nil {
		return err
	}
	ctx := context.Background()
	env, absBin, absDir, d, err := prepareRunner(ctx, *bin, *dir, startOptedIn)
	if err != nil {
		return err
	}
	defer env.Stop()
	if err := env.CreateNamespace(ctx, startPlain, false); err != nil {
		return err
	}
	places := []*startPlace{{name: "pod runner", pods: env.Client, logs: func(_ context.Context, ns, name string) ([]byte, error) {
		return os.ReadFile(env.Runner.LogPath(ns, name, "spark"))
	}}}
	if *onNode {
		policy, _ := filepath.Abs(nodeBenchPolicy)
		nenv, _, err := startNode(ctx, absBin, absDir, d, policy, startOptedIn)
		if err != nil {
			return err
		}
		defer nenv.Stop()
		if _, err := nenv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: startPlain}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		places = append(places, &startPlace{name: "real node", pods: nenv.Client, logs: func(ctx context.Context, ns, name string) ([]byte, error) {
			return nenv.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "spark"}).DoRaw(ctx)
		}, containerdLog: filepath.Join(nenv.Node.Dir(), "logs", "containerd.log")})
	}
	image := "apache/spark:" + d.Version
	for _, p := range places {
		// One of each first, unmeasured: the first pod of a namespace
		// waits for its service account and warms caches.
		for _, ns := range []string{startOptedIn, startPlain} {
			if _, err := startOnce(ctx, p, ns, "warm-up", image); err != nil {
				return fmt.Errorf("%s, warm-up in %s: %w", p.name, ns, err)
			}
		}
	}
	loadBefore := loadAverage()
	for i := range *n {
		for _, p := range places {
			order := []string{startOptedIn, startPlain}
			if i%2 == 1 {
				slices.Reverse(order)
			}
			for _, ns := range order {
				took, err := startOnce(ctx, p, ns, fmt.Sprintf("start-%d", i+1), image)
				if err != nil {
					return fmt.Errorf("%s, run %d in %s: %w", p.name, i+1, ns, err)
				}
				fmt.Printf("bench start: %s, run %d, %s: %s\n", p.name, i+1, ns, took.Round(time.Millisecond))
				var span time.Duration
				if p.containerdLog != "" {
					if span, err = runtimeSpan(p.containerdLog, ns, fmt.Sprintf("start-%d", i+1)); err != nil {
						return fmt.Errorf("%s, run %d in %s: %w", p.name, i+1, ns, err)
					}
				}
				if ns == startOptedIn {
					p.sparklet, p.sparkletRuntime = append(p.sparklet, took), append(p.sparkletRuntime, span)
				} else {
					p.plain, p.plainRuntime = append(p.plain, took), append(p.plainRuntime, span)
				}
			}
		}
	}
	r := &report{}
	startReport(r, places, *n, image, [2]string{loadBefore, loadAverage()}, serverVersion(env))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "start.md"), []byte(r.b.String()), 0o644)
}

// startOnce creates a driver pod whose Spark container prints the time it
// began, and returns the time from the pod's scheduling, as a watch sees
// it, to that print. Both times are this machine's clock.
func startOnce(ctx context.Context, place *startPlace, ns, name, image string) (time.Duration, error) {
	pods := place.pods
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	w, err := pods.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"spark-role": "driver"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark", Image: image, Command: []string{"/bin/sh", "-c", startMarker},
		}}},
	}
	if _, err := pods.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	var scheduled time.Time
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted {
			return 0, fmt.Errorf("pod %s/%s: watch ended with %s", ns, name, ev.Type)
		}
		if scheduled.IsZero() && p.Spec.NodeName != "" {
			scheduled = time.Now()
		}
		switch p.Status.Phase {
		case corev1.PodFailed:
			return 0, fmt.Errorf("pod %s/%s failed: %s %s", ns, name, p.Status.Reason, p.Status.Message)
		case corev1.PodSucceeded:
			raw, err := place.logs(ctx, ns, name)
			if err != nil {
				return 0, fmt.Errorf("pod %s/%s: logs: %w", ns, name, err)
			}
			began, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
			if err != nil {
				return 0, fmt.Errorf("pod %s/%s: its Spark container printed %q, not the time", ns, name, raw)
			}
			exec := time.Unix(0, int64(began*1e9))
			err = pods.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
			return exec.Sub(scheduled), err
		}
	}
	return 0, fmt.Errorf("pod %s/%s: %w before it succeeded", ns, name, ctx.Err())
}

func startReport(r *report, places []*startPlace, n int, image string, loads [2]string, k8s string) {
	r.line("# Driver start latency with and without sparklet")
	r.line("")
	r.line("%s; %d CPUs (%s/%s), %s; Kubernetes %s; sparklet %s. Reproduce: `make bench-start` (options: `go run ./bench start -h`).",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), k8s, gitVersion())
	r.line("")
	r.line("The same driver pod (label `spark-role=driver`, image `%s`, its Spark container's command `%s`) created %d times in a namespace that has opted in (sparklet injects it: the conf init container and the native sidecar run before the Spark container) and in one that has not, taking turns. Measured from the pod's scheduling (the bench's watch sees `spec.nodeName` set) to the Spark container's process printing the time (where the JVM would be exec'd), both on this machine's clock; the kubelet's own timestamps have a resolution of one second. The JVM's own start after that is the same either way. The policy is `%s`.", image, startMarker, n, nodeBenchPolicy)
	r.line("")
	var rows []string
	for _, p := range places {
		s, pl := median(p.sparklet), median(p.plain)
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | **%s** | **%.2f×** |", p.name,
			pl.Round(time.Millisecond), pct(sorted(p.plain), 0.9).Round(time.Millisecond), s.Round(time.Millisecond), pct(sorted(p.sparklet), 0.9).Round(time.Millisecond),
			(s-pl).Round(time.Millisecond), s.Seconds()/pl.Seconds()))
	}
	r.table("| where | without sparklet, median | p90 | with sparklet, median | p90 | **sparklet adds (medians)** | **ratio** |", rows)
	for _, p := range places {
		s, pl := median(p.sparklet), median(p.plain)
		r.line("- %s: sparklet adds %s at the median (target at most 300 ms): %s", p.name, (s - pl).Round(time.Millisecond), map[bool]string{true: "met.", false: "**missed**."}[s-pl <= 300*time.Millisecond])
	}
	r.line("")
	for _, p := range places {
		if p.containerdLog == "" {
			continue
		}
		s, pl := median(p.sparkletRuntime), median(p.plainRuntime)
		r.line("On the %s, from containerd's own log (nanoseconds), the time from the pod's sandbox being ready to the kubelet's request to create the Spark container, which is where sparklet's init containers run: %s without sparklet and %s with it at the median (p90 %s and %s); **sparklet adds %s** (target at most 300 ms: %s).", p.name,
			pl.Round(time.Millisecond), s.Round(time.Millisecond), pct(sorted(p.plainRuntime), 0.9).Round(time.Millisecond), pct(sorted(p.sparkletRuntime), 0.9).Round(time.Millisecond),
			(s - pl).Round(time.Millisecond), map[bool]string{true: "met", false: "**missed**"}[s-pl <= 300*time.Millisecond])
		r.line("")
	}
	r.line("The machine's load average (1 minute) was %s before the first pod and %s after the last.", loads[0], loads[1])
}

// runtimeSpan reads containerd's log for the time from the sandbox of
// pod ns/name being ready to the create of its Spark container.
func runtimeSpan(logFile, ns, name string) (time.Duration, error) {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return 0, err
	}
	var ready time.Time
	sandbox := ""
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case sandbox == "" && strings.Contains(l, `RunPodSandbox for name:\"`+name+`\"`) && strings.Contains(l, `namespace:\"`+ns+`\"`) && strings.Contains(l, "returns sandbox id"):
			ready, err = logTime(l)
			if err != nil {
				return 0, err
			}
			_, id, _ := strings.Cut(l, `returns sandbox id \"`)
			sandbox, _, _ = strings.Cut(id, `\"`)
		case sandbox != "" && strings.Contains(l, `CreateContainer within sandbox \"`+sandbox+`\" for container name:\"spark\"`):
			created, err := logTime(l)
			return created.Sub(ready), err
		}
	}
	return 0, fmt.Errorf("%s has no sandbox of pod %s/%s followed by the create of its Spark container", logFile, ns, name)
}

// logTime is the time of one of containerd's log lines (time="...").
func logTime(line string) (time.Time, error) {
	_, rest, _ := strings.Cut(line, `time="`)
	stamp, _, _ := strings.Cut(rest, `"`)
	return time.Parse(time.RFC3339Nano, stamp)
}

func sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}
