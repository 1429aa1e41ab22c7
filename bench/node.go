package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/hack/spark"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/nodeenv"
	"github.com/sparklet/sparklet/test/podrunner"
)

// nodeCommand is `bench node` (make bench-node): SparkPi from kubectl apply
// to Succeeded on the pod runner and on the real node, side by side in one
// run. It is apart from make bench, which it would make slower by the
// real node and its images.
const nodeCommand = "node"

const (
	nodeBenchNS     = "spark-bench"
	nodeBenchPolicy = "examples/two-core-node-policy.yaml"
)

// nodeSide is one of the two places SparkPi runs.
type nodeSide struct {
	name string
	kube interface {
		Kubectl(context.Context, []byte, ...string) (string, string, error)
	}
	pods  kubernetes.Interface
	times []time.Duration
}

func nodeMain(args []string) error {
	fs := flag.NewFlagSet("bench node", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "sparklet, the control plane's and the node's binaries, helm, spark/ and images/")
	dir := fs.String("dir", ".cache/bench-node", "state and logs")
	out := fs.String("out", "bench/results", "where node.md goes")
	iterations := fs.Int("iterations", 3, "SparkPi runs on each side, taking turns")
	if err := parseCounted(fs, args, "--iterations", iterations); err != nil {
		return err
	}
	ctx := context.Background()
	absBin, absDir, d, err := prepareRun(*bin, *dir)
	if err != nil {
		return err
	}
	manifest, err := os.ReadFile("examples/spark-pi-pod.yaml")
	if err != nil {
		return err
	}
	manifest = d.Retarget(manifest)
	policy, _ := filepath.Abs(nodeBenchPolicy)

	// Both up at once, so that each run of one side is next to a run of
	// the other under the same load; the runs take turns, one at a time.
	setupStart := time.Now()
	env, err := startRunner(ctx, absBin, absDir, policy, nodeBenchNS)
	if err != nil {
		return err
	}
	defer env.Stop()
	runnerUp := time.Since(setupStart)
	nenv, installed, err := startNode(ctx, absBin, absDir, d, policy, nodeBenchNS)
	if err != nil {
		return err
	}
	defer nenv.Stop()

	sides := []*nodeSide{{name: "pod runner", kube: env, pods: env.Client}, {name: "real node", kube: nenv, pods: nenv.Client}}
	loadBefore := loadAverage()
	for i := range *iterations {
		order := slices.Clone(sides)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			took, err := sparkPiOnce(ctx, s, manifest, fmt.Sprintf("spark-pi-%d", i+1))
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.name, i+1, err)
			}
			fmt.Printf("bench node: run %d on the %s: kubectl apply to Succeeded in %s\n", i+1, s.name, took.Round(100*time.Millisecond))
			s.times = append(s.times, took)
		}
	}
	loads := [2]string{loadBefore, loadAverage()}
	r := &report{}
	nodeReport(r, d, sides, loads, runnerUp, nenv, installed, serverVersion(env))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "node.md"), []byte(r.b.String()), 0o644)
}

// parseCounted parses args and checks that the count flag named name is
// at least 1.
func parseCounted(fs *flag.FlagSet, args []string, name string, count *int) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 {
		return fmt.Errorf("%s must be at least 1, got %d", name, *count)
	}
	return nil
}

// prepareRun checks that the run can start and clears what a run before
// it left in dir: it returns bin and dir as absolute paths and the newest
// pinned Spark distribution, installed in bin.
func prepareRun(bin, dir string) (absBin, absDir string, d spark.Dist, err error) {
	if os.Geteuid() != 0 {
		return "", "", d, errors.New("the pod runner and the real node need root")
	}
	absBin, _ = filepath.Abs(bin)
	absDir, _ = filepath.Abs(dir)
	_ = podrunner.UnmountUnder(absDir) // a killed run's volumes and container mounts
	if err := os.RemoveAll(absDir); err != nil {
		return "", "", d, err
	}
	dists, err := spark.Pinned()
	if err != nil {
		return "", "", d, err
	}
	d = dists[len(dists)-1]
	return absBin, absDir, d, d.Installed(absBin)
}

// prepareRunner is prepareRun, then startRunner with the node bench's
// policy.
func prepareRunner(ctx context.Context, bin, dir string, namespaces ...string) (env *testenv.Env, absBin, absDir string, d spark.Dist, err error) {
	if absBin, absDir, d, err = prepareRun(bin, dir); err != nil {
		return nil, "", "", d, err
	}
	policy, _ := filepath.Abs(nodeBenchPolicy)
	env, err = startRunner(ctx, absBin, absDir, policy, namespaces...)
	return env, absBin, absDir, d, err
}

// startRunner starts a control plane with the pod runner under
// dir/runner, sparklet's webhook with policy, and opts namespaces in.
func startRunner(ctx context.Context, bin, dir, policy string, namespaces ...string) (*testenv.Env, error) {
	env, err := testenv.Start(ctx, testenv.Options{BinDir: bin, Dir: filepath.Join(dir, "runner"), PolicyFile: policy, PodRunner: true})
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		if err := env.CreateNamespace(ctx, ns, true); err != nil {
			env.Stop()
			return nil, err
		}
	}
	return env, nil
}

// startNode starts the real node under dir/node with d's image and
// installs the chart with policy, opting namespaces in; installed is how
// long the install took.
func startNode(ctx context.Context, bin, dir string, d spark.Dist, policy string, namespaces ...string) (nenv *nodeenv.Env, installed time.Duration, err error) {
	nenv, err = nodeenv.Start(ctx, nodeenv.Options{BinDir: bin, Dir: filepath.Join(dir, "node"), SparkVersions: []string{d.Version}})
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	if err := nenv.InstallChart(ctx, nodeenv.Install{Chart: "charts/sparklet", PolicyFile: policy, Namespaces: namespaces}, nil); err != nil {
		nenv.Stop()
		return nil, 0, err
	}
	return nenv, time.Since(start), nil
}

// sparkPiOnce applies manifest under name and waits for the pod to
// succeed, returning the time from kubectl apply.
func sparkPiOnce(ctx context.Context, s *nodeSide, manifest []byte, name string) (time.Duration, error) {
	const named = "\n  name: spark-pi\n"
	if !strings.Contains(string(manifest), named) {
		return 0, fmt.Errorf("examples/spark-pi-pod.yaml no longer names its pod spark-pi (%q): each run needs a name of its own", strings.TrimSpace(named))
	}
	pod := strings.Replace(string(manifest), named, "\n  name: "+name+"\n", 1)
	start := time.Now()
	if _, stderr, err := s.kube.Kubectl(ctx, []byte(pod), "apply", "-n", nodeBenchNS, "-f", "-"); err != nil {
		return 0, fmt.Errorf("kubectl apply: %w: %s", err, stderr)
	}
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := s.pods.CoreV1().Pods(nodeBenchNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		if phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s failed: %s", name, p.Status.Message)
		}
		return phase == corev1.PodSucceeded, nil
	})
	if err != nil {
		return 0, fmt.Errorf("pod %s never Succeeded (last phase %q): %w", name, phase, err)
	}
	return time.Since(start), nil
}

func nodeReport(r *report, d spark.Dist, sides []*nodeSide, loads [2]string, runnerUp time.Duration, nenv *nodeenv.Env, installed time.Duration, k8s string) {
	r.line("# SparkPi on the pod runner and on the real node")
	r.line("")
	r.line("%s; %d CPUs (%s/%s), %s; Kubernetes %s; sparklet %s. Reproduce: `make bench-node` (options: `go run ./bench node -h`).",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), k8s, gitVersion())
	r.line("")
	r.line("[`examples/spark-pi-pod.yaml`](../../examples/spark-pi-pod.yaml) with image `apache/spark:%s` and its examples jar, the same manifest and policy ([`%s`](../../%s)) on both sides, from `kubectl apply` to the pod `Succeeded`. The pod runner's control plane runs the webhook as a local process and its pods as local processes on the pinned distribution (docs/pod-runner.md); the real node's runs the chart installed with helm and its pods as containers of the images built here (docs/real-node.md). Both control planes are up at once and the runs take turns, one at a time, so each pair ran under the same load. Absolute times depend on the machine and its load; compare the ratio.",
		d.Version, nodeBenchPolicy, nodeBenchPolicy)
	r.line("")
	rows := make([]string, len(sides[0].times))
	for i := range rows {
		rows[i] = fmt.Sprintf("| %d | %s | %s | %.2f× |", i+1, sides[0].times[i].Round(100*time.Millisecond), sides[1].times[i].Round(100*time.Millisecond),
			sides[1].times[i].Seconds()/sides[0].times[i].Seconds())
	}
	runner, node := median(sides[0].times), median(sides[1].times)
	rows = append(rows, fmt.Sprintf("| **median** | **%s** | **%s** | **%.2f×** |", runner.Round(100*time.Millisecond), node.Round(100*time.Millisecond), node.Seconds()/runner.Seconds()))
	r.table("| run | pod runner | real node | real node / pod runner |", rows)
	r.line("The machine's load average (1 minute) was %s before the first run and %s after the last. All of the real node's pods sit under one cgroup (`/sparklet-node`, cpu.shares 1024), which the kernel weighs against each of the machine's other processes as if it were one process: under other work the node's pods together get about one process's share of the CPU, while the pod runner's processes compete one by one. On a machine that runs nothing else, as a cluster's node does, that difference goes.", loads[0], loads[1])
	r.line("")
	r.line("Set-up in this run: the pod runner's control plane, webhook and namespace %s; the real node's control plane %s, the node Ready with cluster DNS %s later (importing the pause, kubectl, sparklet and Spark %s images), the chart installed and rolled out in %s.",
		runnerUp.Round(100*time.Millisecond), nenv.ControlPlaneUp.Round(100*time.Millisecond), nenv.NodeUp.Round(100*time.Millisecond), d.Version, installed.Round(100*time.Millisecond))
}

// loadAverage is the 1-minute load average from /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// median of durations; the upper middle one of an even count.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
