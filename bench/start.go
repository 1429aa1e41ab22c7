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

// startArm is one way of starting the same driver pod: with sparklet, or
// without it and, as the kubelet's floor for sparklet's shape, with
// containers that do nothing in the places sparklet's go.
type startArm struct {
	name, ns string
	// shape adds the arm's containers to the bare driver pod.
	shape func(pod *corev1.Pod, image string)
}

// startArms are measured in turn, their order rotating each round. The
// sparklet arm comes first and the bare pod second; the report compares
// every arm with the bare pod.
var startArms = []startArm{
	{name: "with sparklet", ns: startOptedIn, shape: func(*corev1.Pod, string) {}},
	{name: "without sparklet", ns: startPlain, shape: func(*corev1.Pod, string) {}},
	// The kubelet starts a pod's init containers one per sync and syncs
	// again only when its once-a-second relist sees the last one running
	// (a native sidecar) or exited (computeInitContainerActions in
	// pkg/kubelet/kuberuntime/kuberuntime_container.go, v1.37.2), so each
	// init container costs a relist whatever it does.
	{name: "one no-op native sidecar", ns: startPlain, shape: func(pod *corev1.Pod, image string) {
		pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image)}
	}},
	{name: "a no-op native sidecar, then a no-op regular init container", ns: startPlain, shape: func(pod *corev1.Pod, image string) {
		pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image), {Name: "noop-init", Image: image, Command: []string{"/bin/true"}}}
	}},
	// sparklet's shape: the sidecar, then the conf container, a native
	// sidecar whose postStart hook holds the Spark container back.
	{name: "two no-op native sidecars, the second with a no-op postStart hook (sparklet's shape)", ns: startPlain, shape: func(pod *corev1.Pod, image string) {
		hooked := noopSidecar("noop-hooked", image)
		hooked.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/true"}}}}
		pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image), hooked}
	}},
}

func noopSidecar(name, image string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, Image: image, RestartPolicy: &always, Command: []string{"/bin/sleep", "3600"}}
}

// startPlace is one cluster the pods start on, with the start latencies
// of each arm measured there.
type startPlace struct {
	name string
	pods kubernetes.Interface
	// logs reads the Spark container's log of the pod ns/name.
	logs func(ctx context.Context, ns, name string) ([]byte, error)
	took [][]time.Duration // by startArms index
	// containerdLog, on the real node, is containerd's log, which times
	// the pod's sandbox and the Spark container's create to the
	// nanosecond (runtimeSpans).
	containerdLog string
	runtime       [][]time.Duration // by startArms index
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
		p.took, p.runtime = make([][]time.Duration, len(startArms)), make([][]time.Duration, len(startArms))
		// One of each first, unmeasured: the first pod of a namespace
		// waits for its service account and warms caches.
		for a, arm := range startArms {
			if _, err := startOnce(ctx, p, arm, fmt.Sprintf("warm-up-%d", a), image); err != nil {
				return fmt.Errorf("%s, warm-up %s: %w", p.name, arm.name, err)
			}
		}
	}
	loadBefore := loadAverage()
	for i := range *n {
		for _, p := range places {
			for k := range startArms {
				a := (i + k) % len(startArms)
				arm := startArms[a]
				name := fmt.Sprintf("start-%d-%d", a, i+1)
				took, err := startOnce(ctx, p, arm, name, image)
				if err != nil {
					return fmt.Errorf("%s, run %d %s: %w", p.name, i+1, arm.name, err)
				}
				fmt.Printf("bench start: %s, run %d, %s: %s\n", p.name, i+1, arm.name, took.Round(time.Millisecond))
				var span time.Duration
				if p.containerdLog != "" {
					if span, err = runtimeSpan(p.containerdLog, arm.ns, name); err != nil {
						return fmt.Errorf("%s, run %d %s: %w", p.name, i+1, arm.name, err)
					}
				}
				p.took[a], p.runtime[a] = append(p.took[a], took), append(p.runtime[a], span)
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
func startOnce(ctx context.Context, place *startPlace, arm startArm, name, image string) (time.Duration, error) {
	pods, ns := place.pods, arm.ns
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
	arm.shape(pod, image)
	// A no-op sidecar's sleep, PID 1 of its container, ignores the
	// kubelet's SIGTERM at the pod's end: without this each such pod ends
	// only after the default 30 s grace. The start measured is unchanged.
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
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
	r.line("The same driver pod (label `spark-role=driver`, image `%s`, its Spark container's command `%s`) created %d times in each of five ways, taking turns (the order rotates each round): in a namespace that has opted in (sparklet injects it: its native sidecar and its conf container, a native sidecar too, start before the Spark container); in one that has not; and, as the kubelet's own floor, in the one that has not with containers that do nothing (`sleep`, `true`): one native sidecar; a native sidecar followed by a regular init container, which the kubelet sees exit only at its next relist of the runtime, once a second (how sparklet's conf copy ran before); and two native sidecars, the second with a postStart hook, which is sparklet's shape (the sidecar, then the conf container, whose hook holds the Spark container back). Measured from the pod's scheduling (the bench's watch sees `spec.nodeName` set) to the Spark container's process printing the time (where the JVM would be exec'd), both on this machine's clock; the kubelet's own timestamps have a resolution of one second. The JVM's own start after that is the same either way. The policy is `%s`.", image, startMarker, n, nodeBenchPolicy)
	r.line("")
	var rows []string
	for _, p := range places {
		bare := median(p.took[1])
		for a, arm := range startArms {
			m := median(p.took[a])
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %.2f× |", p.name, arm.name,
				m.Round(time.Millisecond), pct(sorted(p.took[a]), 0.9).Round(time.Millisecond), (m-bare).Round(time.Millisecond), m.Seconds()/bare.Seconds()))
		}
	}
	r.table("| where | the pod | median | p90 | added to the bare pod (medians) | ratio |", rows)
	for _, p := range places {
		s, pl, shape := median(p.took[0]), median(p.took[1]), median(p.took[len(startArms)-1])
		r.line("- %s: sparklet adds %s at the median (target at most 300 ms): %s Containers that do nothing in sparklet's places add %s; sparklet's own work adds %s to that.", p.name,
			(s - pl).Round(time.Millisecond), map[bool]string{true: "met.", false: "**missed**."}[s-pl <= 300*time.Millisecond],
			(shape - pl).Round(time.Millisecond), (s - shape).Round(time.Millisecond))
	}
	r.line("")
	for _, p := range places {
		if p.containerdLog == "" {
			continue
		}
		var parts []string
		for a, arm := range startArms {
			parts = append(parts, fmt.Sprintf("%s %s (p90 %s)", arm.name, median(p.runtime[a]).Round(time.Millisecond), pct(sorted(p.runtime[a]), 0.9).Round(time.Millisecond)))
		}
		s, pl := median(p.runtime[0]), median(p.runtime[1])
		r.line("On the %s, from containerd's own log (nanoseconds), the time from the pod's sandbox being ready to the kubelet's request to create the Spark container, which is where init containers run, at the median: %s. **sparklet adds %s** (target at most 300 ms: %s).", p.name,
			strings.Join(parts, "; "), (s - pl).Round(time.Millisecond), map[bool]string{true: "met", false: "**missed**"}[s-pl <= 300*time.Millisecond])
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
