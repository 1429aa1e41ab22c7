package main

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/patches"
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
	// shape adds the arm's containers to the bare driver pod. injected
	// are the init containers sparklet gives that pod where the arm runs
	// (sparklet's sidecar, then its conf container).
	shape func(pod *corev1.Pod, image string, injected []corev1.Container)
}

// The arms the report compares by index.
const (
	armSparklet          = 0
	armBare              = 1
	armShape             = 4
	armShapeResources    = 5
	armShapeSecurityCtxs = 6
)

// startArms are measured in turn, their order rotating each round. The
// report compares every arm with the bare pod, and the last two with
// sparklet's shape.
var startArms = []startArm{
	armSparklet: {name: "with sparklet", ns: startOptedIn, shape: func(*corev1.Pod, string, []corev1.Container) {}},
	armBare:     {name: "without sparklet", ns: startPlain, shape: func(*corev1.Pod, string, []corev1.Container) {}},
	// The kubelet starts a pod's init containers one per sync and syncs
	// again only when its once-a-second relist sees the last one running
	// (a native sidecar) or exited (computeInitContainerActions in
	// pkg/kubelet/kuberuntime/kuberuntime_container.go, v1.37.2), so each
	// init container costs a relist whatever it does.
	{name: "one no-op native sidecar", ns: startPlain, shape: func(pod *corev1.Pod, image string, _ []corev1.Container) {
		pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image)}
	}},
	{name: "a no-op native sidecar, then a no-op regular init container", ns: startPlain, shape: func(pod *corev1.Pod, image string, _ []corev1.Container) {
		pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image), {Name: "noop-init", Image: image, Command: []string{"/bin/true"}}}
	}},
	armShape: {name: "two no-op native sidecars, the second with a no-op postStart hook (sparklet's shape)", ns: startPlain, shape: func(pod *corev1.Pod, image string, _ []corev1.Container) {
		noopShape(pod, image)
	}},
	// What sparklet's containers carry besides their commands, one part
	// at a time: the kubelet and the runtime act on both at each start.
	armShapeResources: {name: "sparklet's shape, its no-op containers with sparklet's resources (the conf container's CPU limit among them)", ns: startPlain, shape: func(pod *corev1.Pod, image string, injected []corev1.Container) {
		noopShape(pod, image)
		for i := range pod.Spec.InitContainers {
			pod.Spec.InitContainers[i].Resources = *injected[i].Resources.DeepCopy()
		}
	}},
	armShapeSecurityCtxs: {name: "sparklet's shape, its no-op containers with sparklet's security contexts", ns: startPlain, shape: func(pod *corev1.Pod, image string, injected []corev1.Container) {
		noopShape(pod, image)
		for i := range pod.Spec.InitContainers {
			pod.Spec.InitContainers[i].SecurityContext = injected[i].SecurityContext.DeepCopy()
		}
	}},
}

// noopShape gives pod sparklet's shape with containers that do nothing:
// the sidecar, then the conf container, a native sidecar whose postStart
// hook holds the Spark container back.
func noopShape(pod *corev1.Pod, image string) {
	hooked := noopSidecar("noop-hooked", image)
	hooked.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/true"}}}}
	pod.Spec.InitContainers = []corev1.Container{noopSidecar("noop-sidecar", image), hooked}
}

func noopSidecar(name, image string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, Image: image, RestartPolicy: &always, Command: []string{"/bin/sleep", "3600"}}
}

// injectedInits is what sparklet's webhook in the cluster of pods makes of
// the bare driver pod: its sidecar and its conf container, read from a server
// dry run in the namespace that has opted in.
func injectedInits(ctx context.Context, pods kubernetes.Interface, image string) ([]corev1.Container, error) {
	// The namespace's service accounts may not exist yet.
	var got *corev1.Pod
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, last = pods.CoreV1().Pods(startOptedIn).Create(ctx, barePod("dry-run", image), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("dry run of the driver pod: %w (last: %v)", err, last)
	}
	var inits []corev1.Container
	for _, name := range []string{patches.SidecarName, patches.ConfInitName} {
		i := slices.IndexFunc(got.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("dry run of the driver pod: no init container %s injected", name)
		}
		inits = append(inits, got.Spec.InitContainers[i])
	}
	return inits, nil
}

// startPlace is one cluster the pods start on, with the start latencies
// of each arm measured there.
type startPlace struct {
	name string
	pods kubernetes.Interface
	// logs reads the log of container c of the pod ns/name.
	logs func(ctx context.Context, ns, name, c string) ([]byte, error)
	took [][]time.Duration // by startArms index
	// injected are sparklet's init containers here (injectedInits).
	injected []corev1.Container
	// containerdLog, on the real node, is containerd's log, which times
	// the pod's sandbox and its containers' creates and starts to the
	// nanosecond (readRuntime).
	containerdLog string
	runtime       [][]podRuntime // by startArms index
	// listened is, for sparklet's arm on the real node, the time from
	// the sandbox being ready to the sidecar's log saying it listens.
	listened []time.Duration
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
	places := []*startPlace{{name: "pod runner", pods: env.Client, logs: func(_ context.Context, ns, name, c string) ([]byte, error) {
		return os.ReadFile(env.Runner.LogPath(ns, name, c))
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
		places = append(places, &startPlace{name: "real node", pods: nenv.Client, logs: func(ctx context.Context, ns, name, c string) ([]byte, error) {
			return nenv.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: c}).DoRaw(ctx)
		}, containerdLog: filepath.Join(nenv.Node.Dir(), "logs", "containerd.log")})
	}
	image := "apache/spark:" + d.Version
	for _, p := range places {
		p.took, p.runtime = make([][]time.Duration, len(startArms)), make([][]podRuntime, len(startArms))
		if p.injected, err = injectedInits(ctx, p.pods, image); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
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
				res, err := startOnce(ctx, p, arm, name, image)
				if err != nil {
					return fmt.Errorf("%s, run %d %s: %w", p.name, i+1, arm.name, err)
				}
				fmt.Printf("bench start: %s, run %d, %s: %s\n", p.name, i+1, arm.name, res.took.Round(time.Millisecond))
				p.took[a] = append(p.took[a], res.took)
				if p.containerdLog == "" {
					continue
				}
				rt, err := readRuntime(p.containerdLog, arm.ns, name)
				if err != nil {
					return fmt.Errorf("%s, run %d %s: %w", p.name, i+1, arm.name, err)
				}
				p.runtime[a] = append(p.runtime[a], rt)
				if !res.listened.IsZero() {
					p.listened = append(p.listened, res.listened.Sub(rt.ready))
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

// startResult is one pod's start: the time from its scheduling, as a
// watch sees it, to its Spark container's first process, and for a pod
// sparklet injected, when its sidecar's log says it listens.
type startResult struct {
	took     time.Duration
	listened time.Time
}

// startOnce creates a driver pod whose Spark container prints the time it
// began, and measures its start. All times are this machine's clock.
func startOnce(ctx context.Context, place *startPlace, arm startArm, name, image string) (startResult, error) {
	pods, ns := place.pods, arm.ns
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	w, err := pods.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return startResult{}, err
	}
	defer w.Stop()
	pod := barePod(name, image)
	arm.shape(pod, image, place.injected)
	// A no-op sidecar's sleep, PID 1 of its container, ignores the
	// kubelet's SIGTERM at the pod's end: without this each such pod ends
	// only after the default 30 s grace. The start measured is unchanged.
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if _, err := pods.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return startResult{}, err
	}
	var scheduled time.Time
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted {
			return startResult{}, fmt.Errorf("pod %s/%s: watch ended with %s", ns, name, ev.Type)
		}
		if scheduled.IsZero() && p.Spec.NodeName != "" {
			scheduled = time.Now()
		}
		switch p.Status.Phase {
		case corev1.PodFailed:
			return startResult{}, fmt.Errorf("pod %s/%s failed: %s %s", ns, name, p.Status.Reason, p.Status.Message)
		case corev1.PodSucceeded:
			raw, err := place.logs(ctx, ns, name, "spark")
			if err != nil {
				return startResult{}, fmt.Errorf("pod %s/%s: logs: %w", ns, name, err)
			}
			began, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
			if err != nil {
				return startResult{}, fmt.Errorf("pod %s/%s: its Spark container printed %q, not the time", ns, name, raw)
			}
			res := startResult{took: time.Unix(0, int64(began*1e9)).Sub(scheduled)}
			if ns == startOptedIn && place.containerdLog != "" {
				if res.listened, err = sidecarListened(ctx, place, ns, name); err != nil {
					return startResult{}, err
				}
			}
			return res, pods.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	return startResult{}, fmt.Errorf("pod %s/%s: %w before it succeeded", ns, name, ctx.Err())
}

// barePod is the driver pod every arm starts from.
func barePod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"spark-role": "driver"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark", Image: image, Command: []string{"/bin/sh", "-c", startMarker},
		}}},
	}
}

// sidecarListened is the time of the sidecar's log line that says it
// listens, and so lets the conf container's hook hold the Spark container
// back no longer.
func sidecarListened(ctx context.Context, place *startPlace, ns, name string) (time.Time, error) {
	raw, err := place.logs(ctx, ns, name, patches.SidecarName)
	if err != nil {
		return time.Time{}, fmt.Errorf("pod %s/%s: sidecar log: %w", ns, name, err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		var e struct{ Msg, Time string }
		if json.Unmarshal([]byte(l), &e) == nil && strings.HasPrefix(e.Msg, "listening") {
			return time.Parse(time.RFC3339Nano, e.Time)
		}
	}
	return time.Time{}, fmt.Errorf("pod %s/%s: the sidecar's log does not say it listens:\n%s", ns, name, raw)
}

func startReport(r *report, places []*startPlace, n int, image string, loads [2]string, k8s string) {
	r.line("# Driver start latency with and without sparklet")
	r.line("")
	r.line("%s; %d CPUs (%s/%s), %s; Kubernetes %s; sparklet %s. Reproduce: `make bench-start` (options: `go run ./bench start -h`).",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), k8s, gitVersion())
	r.line("")
	r.line("The same driver pod (label `spark-role=driver`, image `%s`, its Spark container's command `%s`) created %d times in each of %d ways, taking turns (the order rotates each round): in a namespace that has opted in (sparklet injects it: its native sidecar and its conf container, a native sidecar too, start before the Spark container); in one that has not; and, as the kubelet's own floor, in the one that has not with containers that do nothing (`sleep`, `true`): one native sidecar; a native sidecar followed by a regular init container, which the kubelet sees exit only at its next relist of the runtime, once a second (how sparklet's conf copy ran before); two native sidecars, the second with a postStart hook, which is sparklet's shape (the sidecar, then the conf container, whose hook holds the Spark container back); and that shape once with the resources of sparklet's two containers and once with their security contexts, as sparklet's webhook gives them to this pod (a server dry run). Measured from the pod's scheduling (the bench's watch sees `spec.nodeName` set) to the Spark container's process printing the time (where the JVM would be exec'd), both on this machine's clock; the kubelet's own timestamps have a resolution of one second. The JVM's own start after that is the same either way. The policy is `%s`.", image, startMarker, n, len(startArms), nodeBenchPolicy)
	r.line("")
	var rows []string
	for _, p := range places {
		bare := median(p.took[armBare])
		for a, arm := range startArms {
			m := median(p.took[a])
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %.2f× |", p.name, arm.name,
				m.Round(time.Millisecond), pct(sorted(p.took[a]), 0.9).Round(time.Millisecond), (m-bare).Round(time.Millisecond), m.Seconds()/bare.Seconds()))
		}
	}
	r.table("| where | the pod | median | p90 | added to the bare pod (medians) | ratio |", rows)
	for _, p := range places {
		s, pl, shape := median(p.took[armSparklet]), median(p.took[armBare]), median(p.took[armShape])
		r.line("- %s: sparklet adds %s at the median (target at most 300 ms): %s Containers that do nothing in sparklet's places add %s; sparklet's own work adds %s to that. Of that work, its containers' resources alone add %s to the shape, their security contexts alone %s.", p.name,
			(s - pl).Round(time.Millisecond), map[bool]string{true: "met.", false: "**missed**."}[s-pl <= 300*time.Millisecond],
			(shape - pl).Round(time.Millisecond), (s - shape).Round(time.Millisecond),
			(median(p.took[armShapeResources]) - shape).Round(time.Millisecond), (median(p.took[armShapeSecurityCtxs]) - shape).Round(time.Millisecond))
	}
	r.line("")
	for _, p := range places {
		if p.containerdLog == "" {
			continue
		}
		var parts []string
		for a, arm := range startArms {
			spans := spanOf(p.runtime[a])
			parts = append(parts, fmt.Sprintf("%s %s (p90 %s)", arm.name, median(spans).Round(time.Millisecond), pct(sorted(spans), 0.9).Round(time.Millisecond)))
		}
		s, pl := median(spanOf(p.runtime[armSparklet])), median(spanOf(p.runtime[armBare]))
		r.line("On the %s, from containerd's own log (nanoseconds), the time from the pod's sandbox being ready to the kubelet's request to create the Spark container, which is where init containers run, at the median: %s. **sparklet adds %s** (target at most 300 ms: %s).", p.name,
			strings.Join(parts, "; "), (s - pl).Round(time.Millisecond), map[bool]string{true: "met", false: "**missed**"}[s-pl <= 300*time.Millisecond])
		r.line("")
		runtimeSteps(r, p)
	}
	r.line("The machine's load average (1 minute) was %s before the first pod and %s after the last.", loads[0], loads[1])
}

// runtimeSteps breaks sparklet's start on the real node into its steps,
// beside the same steps of its shape with containers that do nothing:
// the medians, from the sandbox being ready, of containerd's log lines
// and of the sidecar's own.
func runtimeSteps(r *report, p *startPlace) {
	// step is the median over arm a's pods of what at finds in each.
	step := func(a int, at func(podRuntime) (time.Duration, bool)) string {
		var ds []time.Duration
		for _, rt := range p.runtime[a] {
			if d, ok := at(rt); ok {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			return "—"
		}
		return median(ds).Round(time.Millisecond).String()
	}
	// initStep is when init container i reached the step that of
	// records: created or started.
	initStep := func(i int, of func(podRuntime) map[string]time.Duration) func(podRuntime) (time.Duration, bool) {
		return func(rt podRuntime) (time.Duration, bool) {
			if i >= len(rt.inits) {
				return 0, false
			}
			d, ok := of(rt)[rt.inits[i]]
			return d, ok
		}
	}
	created := func(rt podRuntime) map[string]time.Duration { return rt.created }
	started := func(rt podRuntime) map[string]time.Duration { return rt.started }
	listened := "—"
	if len(p.listened) > 0 {
		listened = median(p.listened).Round(time.Millisecond).String()
	}
	row := func(what string, at func(podRuntime) (time.Duration, bool)) string {
		return fmt.Sprintf("| %s | %s | %s | %s | %s |", what, step(armSparklet, at), step(armShape, at), step(armShapeResources, at), step(armShapeSecurityCtxs, at))
	}
	r.line("Where the time goes on the %s: the medians, from the sandbox being ready, of each step in containerd's log and of the sidecar's log line saying the Spark container may start (written once it has read its pod, written the JVM's token and made its serving certificate, and listens).", p.name)
	r.line("")
	r.table("| step | sparklet | its shape with containers that do nothing | … with sparklet's resources | … with sparklet's security contexts |", []string{
		row("the first init container created (sparklet's sidecar)", initStep(0, created)),
		row("its start returned", initStep(0, started)),
		fmt.Sprintf("| the sidecar listens | %s | — | — | — |", listened),
		row("the second init container created (the conf container)", initStep(1, created)),
		row("its start returned; the kubelet runs its postStart hook", initStep(1, started)),
		row("the Spark container created, once the hook returned", func(rt podRuntime) (time.Duration, bool) { return rt.span(), true }),
	})
}

// spanOf is each pod's span (podRuntime.span).
func spanOf(rts []podRuntime) []time.Duration {
	spans := make([]time.Duration, len(rts))
	for i, rt := range rts {
		spans[i] = rt.span()
	}
	return spans
}

func sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}
