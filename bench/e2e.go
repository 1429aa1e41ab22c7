package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/nodeenv"
)

// e2eCommand is `bench e2e` (make bench-e2e): on the real node, the same
// Spark jobs through sparklet (kubectl apply of a driver pod) and through
// spark-submit --deploy-mode cluster, taking turns, timed from the apply
// or submit to the first executor Running, the driver Succeeded and
// nothing of the application left, with the API requests each made.
const e2eCommand = "e2e"

const (
	e2eOptedIn = "e2e-sparklet"
	e2ePlain   = "e2e-cluster-mode"
	// e2eServiceAccount is the cluster-mode driver's, with the Role
	// Spark's docs ask for (running-on-kubernetes.md, RBAC).
	e2eServiceAccount = "spark"
	// e2eScripts is the ConfigMap that carries the PySpark job's script
	// into both namespaces; it is set up once, not part of any run.
	e2eScripts = "e2e-scripts"
	// e2eSettle is how long after the last object of a run is gone its
	// counts are read: the requests that follow a deletion (the
	// EndpointSlice controller's, the last Events) land in the run they
	// belong to, not the next. The background is subtracted for it too.
	e2eSettle = 5 * time.Second
)

// e2eSide is sparklet or cluster mode.
type e2eSide int

const (
	sideSparklet e2eSide = iota
	sideCluster
)

func (s e2eSide) String() string { return [...]string{"sparklet", "cluster mode"}[s] }

func (s e2eSide) namespace() string { return [...]string{e2eOptedIn, e2ePlain}[s] }

// e2eJob is one Spark job both sides run.
type e2eJob struct {
	name string
	// pod is the driver pod applied through sparklet, named name.
	pod func(name string) []byte
	// submit is spark-submit's arguments after the master and deploy
	// mode for the same job, its driver pod named name.
	submit func(name string) []string
	// result is a line the driver prints when the job's answer is right.
	result string
}

// e2eRun is what one run measured; times are from the apply or submit.
type e2eRun struct {
	side                                                  e2eSide
	driverCreated, driverScheduled, driverRunning         time.Duration
	executorCreated, executorRunning, succeeded, leftNone time.Duration
	submitExited                                          time.Duration
	// requests are the API server's counts over the run, net of the
	// bench's own and of the background (netRequests); server and own
	// are the counts before that, window the run's length, and quiet the
	// counts of the quiet window before it.
	requests, server, own, quiet map[string]float64
	window                       time.Duration
}

// e2eEnv is the real node with sparklet's chart, the bench's counted
// client and where spark-submit runs.
type e2eEnv struct {
	node       *nodeenv.Env
	client     kubernetes.Interface
	counter    *requestCounter
	dist       spark.Dist
	sparkHome  string
	master     string
	kubeconfig string
	dir        string
	quiet      time.Duration
}

func e2eMain(args []string) error {
	fs := flag.NewFlagSet("bench e2e", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "sparklet, the control plane's and the node's binaries, helm, spark/ and images/")
	dir := fs.String("dir", ".cache/bench-e2e", "state and logs")
	out := fs.String("out", "bench/results", "where e2e.md goes")
	iterations := fs.Int("iterations", 3, "runs of each job on each side, taking turns")
	quiet := fs.Duration("quiet", 30*time.Second, "quiet window before each run in which the node's own requests are counted")
	jobs := fs.String("jobs", "spark-pi,groupcount", "comma-separated jobs to run: spark-pi, groupcount")
	if err := parseCounted(fs, args, "--iterations", iterations); err != nil {
		return err
	}
	if *quiet < time.Second {
		return fmt.Errorf("--quiet must be at least 1s, got %s", *quiet)
	}
	ctx := context.Background()
	absBin, absDir, d, err := prepareRun(*bin, *dir)
	if err != nil {
		return err
	}
	selected, err := e2eJobs(d, *jobs)
	if err != nil {
		return err
	}
	policy, _ := filepath.Abs(nodeBenchPolicy)
	nenv, installed, err := startNode(ctx, absBin, absDir, d, policy, e2eOptedIn)
	if err != nil {
		return err
	}
	defer nenv.Stop()
	e, err := newE2EEnv(ctx, nenv, d, absBin, absDir, *quiet)
	if err != nil {
		return err
	}
	results := map[string][]*e2eRun{}
	var all []*e2eRun
	loadBefore := loadAverage()
	for i := range *iterations {
		for _, job := range selected {
			order := []e2eSide{sideSparklet, sideCluster}
			if i%2 == 1 {
				slices.Reverse(order)
			}
			for _, side := range order {
				run, err := e.runOnce(ctx, job, side, fmt.Sprintf("%s-%d", job.name, i+1))
				if err != nil {
					return fmt.Errorf("%s through %s, run %d: %w", job.name, side, i+1, err)
				}
				fmt.Printf("bench e2e: %s through %s, run %d: first executor Running %s, result %s, nothing left %s, %.0f API requests before the background is taken away\n",
					job.name, side, i+1, rd(run.executorRunning), rd(run.succeeded), rd(run.leftNone), sum(run.server)-sum(run.own))
				results[job.name] = append(results[job.name], run)
				all = append(all, run)
			}
		}
	}
	netRequests(all, *quiet)
	r := &report{}
	e2eReport(r, e, selected, results, [2]string{loadBefore, loadAverage()}, installed)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "e2e.md"), []byte(r.b.String()), 0o644)
}

// newE2EEnv makes the bench's counted client and the cluster-mode
// namespace with its ServiceAccount and Role, and puts the PySpark
// script into both namespaces.
func newE2EEnv(ctx context.Context, nenv *nodeenv.Env, d spark.Dist, bin, dir string, quiet time.Duration) (*e2eEnv, error) {
	kubeconfig := nenv.Cluster.Kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	counter := &requestCounter{counts: map[string]float64{}}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	e := &e2eEnv{node: nenv, client: client, counter: counter, dist: d, sparkHome: d.Home(bin),
		master: "k8s://" + cfg.Host, kubeconfig: kubeconfig, dir: dir, quiet: quiet}
	core, rbac := client.CoreV1(), client.RbacV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2ePlain}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if _, err := core.ServiceAccounts(e2ePlain).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: e2eServiceAccount}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	// What the driver's allocator touches in cluster mode: its executors,
	// their ConfigMap, the driver's Service and on-demand PVCs.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps", "persistentvolumeclaims"}, Verbs: []string{"*"},
	}}}
	if _, err := rbac.Roles(e2ePlain).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: e2eServiceAccount, Namespace: e2ePlain}}}
	if _, err := rbac.RoleBindings(e2ePlain).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	script, err := os.ReadFile("examples/groupcount.py")
	if err != nil {
		return nil, err
	}
	for _, ns := range []string{e2eOptedIn, e2ePlain} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: e2eScripts}, Data: map[string]string{"groupcount.py": string(script)}}
		if _, err := core.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	return e, os.WriteFile(filepath.Join(dir, "groupcount-template.yaml"), []byte(scriptTemplate), 0o644)
}

// scriptTemplate is the cluster-mode driver's pod template: the script's
// ConfigMap at /opt/job, where the sparklet-side pod mounts it too.
const scriptTemplate = `apiVersion: v1
kind: Pod
spec:
  containers:
  - name: spark-kubernetes-driver
    volumeMounts: [{name: job, mountPath: /opt/job}]
  volumes:
  - name: job
    configMap: {name: ` + e2eScripts + `}
`

// e2eConf is the Spark configuration of both sides: the example's
// annotation (examples/spark-pi-pod.yaml) and what the policy
// (examples/two-core-node-policy.yaml) adds on the sparklet side.
var e2eConf = []string{
	"spark.executor.instances=2", "spark.executor.memory=512m", "spark.driver.memory=512m",
	"spark.kubernetes.executor.request.cores=100m", "spark.eventLog.enabled=false",
}

// e2eJobs are the jobs --jobs names, for Spark d.
func e2eJobs(d spark.Dist, names string) ([]e2eJob, error) {
	piManifest, err := os.ReadFile("examples/spark-pi-pod.yaml")
	if err != nil {
		return nil, err
	}
	piManifest = d.Retarget(piManifest)
	const named = "\n  name: spark-pi\n"
	if !strings.Contains(string(piManifest), named) {
		return nil, fmt.Errorf("examples/spark-pi-pod.yaml no longer names its pod spark-pi (%q): each run needs a name of its own", strings.TrimSpace(named))
	}
	image := "apache/spark:" + d.Version
	clusterArgs := func(name string) []string {
		args := []string{"--name", name, "--conf", "spark.kubernetes.driver.pod.name=" + name,
			"--conf", "spark.kubernetes.container.image=" + image,
			"--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=" + e2eServiceAccount}
		for _, c := range e2eConf {
			args = append(args, "--conf", c)
		}
		return args
	}
	all := []e2eJob{{
		name: "spark-pi",
		pod: func(name string) []byte {
			return []byte(strings.Replace(string(piManifest), named, "\n  name: "+name+"\n", 1))
		},
		submit: func(name string) []string {
			return append(clusterArgs(name), "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/"+d.ExamplesJar(), "100")
		},
		result: "Pi is roughly 3.1",
	}, {
		name: "groupcount",
		pod: func(name string) []byte {
			conf := strings.ReplaceAll(strings.Join(e2eConf[:3], "\n      "), "=", " ")
			return []byte(fmt.Sprintf(groupcountPod, name, conf, image, e2eScripts))
		},
		submit: func(name string) []string {
			return append(clusterArgs(name), "--conf", "spark.kubernetes.driver.podTemplateFile=groupcount-template.yaml", "local:///opt/job/groupcount.py")
		},
		result: "key-0 count=200 sum=100500",
	}}
	var out []e2eJob
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(j e2eJob) bool { return j.name == n })
		if i < 0 {
			return nil, fmt.Errorf("--jobs: unknown job %q; use a comma-separated list of spark-pi, groupcount", n)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// groupcountPod is examples/groupcount.py's driver pod as a user writes
// it, the script from a ConfigMap, its resources examples/spark-pi-pod.yaml's.
const groupcountPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels:
    spark-role: driver
  annotations:
    sparklet.io/spark-conf: |
      %s
spec:
  restartPolicy: Never
  containers:
  - name: spark
    image: %s
    args: [driver, local:///opt/job/groupcount.py]
    volumeMounts: [{name: job, mountPath: /opt/job}]
    resources:
      requests: {cpu: "1", memory: 2Gi}
      limits: {memory: 2Gi}
  volumes:
  - name: job
    configMap: {name: %s}
`

// runOnce counts the node's background over the quiet window, then runs
// job through side under name: from the apply or submit to the driver
// Succeeded, its result checked in its log, the driver pod deleted, and
// no pod, ConfigMap or Service of the application left.
func (e *e2eEnv) runOnce(ctx context.Context, job e2eJob, side e2eSide, name string) (*e2eRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ns := side.namespace()
	quietStart := requestsByResource(apiMetrics(ctx, e.client))
	if err := sleepCtx(ctx, e.quiet); err != nil {
		return nil, err
	}
	before := requestsByResource(apiMetrics(ctx, e.client))
	quiet := diff(before, quietStart)
	windowStart := time.Now()
	own := e.counter.snapshot()

	tl := newTimeline()
	go tl.follow(ctx, e.client, ns)
	if err := tl.waitStarted(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	exited := make(chan error, 1)
	if side == sideSparklet {
		if _, stderr, err := e.node.Kubectl(ctx, job.pod(name), "apply", "-n", ns, "-f", "-"); err != nil {
			return nil, fmt.Errorf("kubectl apply: %w: %s", err, stderr)
		}
		close(exited)
	} else {
		cmd, err := e.submit(ctx, job, name)
		if err != nil {
			return nil, err
		}
		go func() { exited <- cmd.Wait() }()
	}
	driver, err := tl.waitDriver(ctx, name)
	if err != nil {
		return nil, err
	}
	run := &e2eRun{side: side}
	if side == sideCluster {
		if err := <-exited; err != nil {
			return nil, fmt.Errorf("spark-submit: %w (its log: %s)", err, e.submitLog(name))
		}
		run.submitExited = time.Since(start)
	}
	container := map[e2eSide]string{sideSparklet: "spark", sideCluster: "spark-kubernetes-driver"}[side]
	log, err := e.client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("driver log: %w", err)
	}
	if !strings.Contains(string(log), job.result) {
		return nil, fmt.Errorf("the driver's log has no %q", job.result)
	}
	if err := e.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	if err := e.waitNothingLeft(ctx, ns); err != nil {
		return nil, err
	}
	run.leftNone = time.Since(start)
	tl.stop()
	if err := sleepCtx(ctx, e2eSettle); err != nil {
		return nil, err
	}
	after := requestsByResource(apiMetrics(ctx, e.client))
	run.window = time.Since(windowStart)
	run.server, run.own, run.quiet = diff(after, before), diff(e.counter.snapshot(), own), quiet
	run.driverCreated, run.driverScheduled, run.driverRunning, run.succeeded = driver.seen.Sub(start), driver.scheduled.Sub(start), driver.running.Sub(start), driver.done.Sub(start)
	run.executorCreated, run.executorRunning = tl.firstExecutor(start)
	if run.executorRunning <= 0 {
		return nil, fmt.Errorf("the bench's watch saw no executor pod of %s Running", name)
	}
	return run, nil
}

// netRequests sets each run's requests: the API server's counts less
// the bench's own and less the node's background, whose rate is that of
// all the runs' quiet windows together (a longer sample than one window:
// the background's watches are re-established at random times), times
// the run's length. A count can come out a little below zero where a run
// had less background than the rate; it is kept, so the totals stay
// unbiased.
func netRequests(runs []*e2eRun, quiet time.Duration) {
	pooled := map[string]float64{}
	for _, r := range runs {
		for k, v := range r.quiet {
			pooled[k] += v
		}
	}
	seconds := quiet.Seconds() * float64(len(runs))
	for _, r := range runs {
		r.requests = map[string]float64{}
		for k, v := range r.server {
			r.requests[k] = v - r.own[k]
		}
		for k, v := range pooled {
			r.requests[k] -= v / seconds * r.window.Seconds()
		}
	}
}

// submit starts spark-submit in cluster mode on this machine against the
// node's API server, with the admin kubeconfig as its credential (Spark's
// client auto-configures from KUBECONFIG), and waits for the application
// as spark-submit does by default.
func (e *e2eEnv) submit(ctx context.Context, job e2eJob, name string) (*exec.Cmd, error) {
	args := append([]string{"--master", e.master, "--deploy-mode", "cluster",
		"--conf", "spark.kubernetes.namespace=" + e2ePlain}, job.submit(name)...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.sparkHome, "bin", "spark-submit"), args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "SPARK_HOME="+e.sparkHome, "KUBECONFIG="+e.kubeconfig)
	logFile, err := os.Create(filepath.Join(e.dir, name+".spark-submit.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("spark-submit: %w", err)
	}
	return cmd, nil
}

func (e *e2eEnv) submitLog(name string) string {
	data, _ := os.ReadFile(filepath.Join(e.dir, name+".spark-submit.log"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// waitNothingLeft waits until ns holds no pod, no Service and no
// ConfigMap but the namespace's own (kube-root-ca.crt) and the script's.
func (e *e2eEnv) waitNothingLeft(ctx context.Context, ns string) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
		cms, err := e.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range cms.Items {
			if c.Name != "kube-root-ca.crt" && c.Name != e2eScripts {
				left = append(left, "configmap/"+c.Name)
			}
		}
		svcs, err := e.client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range svcs.Items {
			left = append(left, "service/"+s.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("still left in %s: %s: %w", ns, strings.Join(left, ", "), err)
	}
	return nil
}

// sleepCtx waits d: a measuring window, not a synchronisation.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
