package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/cluster"
	testenv "github.com/sparklet/sparklet/test/env"
)

// The real Spark driver runs as a pod on the pod runner's node, as a
// PySpark program that starts a SparkContext and waits: the context's
// Kubernetes scheduler backend asks for the executors, which land on kwok's
// fake nodes, go Running there and never register.
const (
	jvmDriverPod = "driver"
	jvmProgram   = `# The benchmark's driver program: start Spark, whose Kubernetes scheduler
# backend asks for spark.executor.instances executors, then wait.
import time
from pyspark import SparkContext

sc = SparkContext()
print("bench: SparkContext started,", sc.applicationId, flush=True)
time.sleep(3600)
`
	// jvmConf keeps the driver waiting on executors that never register:
	// the SparkContext does not wait for them to start
	// (minRegisteredResourcesRatio 0), and executors the allocator created
	// count as pending for an hour, not Spark's 600 s.
	jvmConf = `spark.driver.memory 512m
spark.scheduler.minRegisteredResourcesRatio 0
spark.kubernetes.allocation.executor.timeout 3600s
spark.ui.enabled false
`
	sidecarContainer = "sparklet-sidecar"
	sparkContainer   = "spark"
)

// jvmAllocation runs the real driver of the newest pinned Spark, first
// straight to the API server with its own service account token (b-jvm),
// then injected, through the sidecar (c-jvm), and reports them next to
// the emulator's (b) and (c) when the allocation section ran too.
func jvmAllocation(ctx context.Context, env *testenv.Env, o options, r *report, emulated []result) ([]result, error) {
	dists, err := spark.Pinned()
	if err != nil {
		return nil, err
	}
	d := dists[len(dists)-1]
	if err := d.Installed(o.bin); err != nil {
		return nil, fmt.Errorf("%w (make spark-dists)", err)
	}
	image := "apache/spark:" + d.Version
	direct, err := jvmRun(ctx, env, o, jvmContender{name: fmt.Sprintf("(b-jvm) Spark %s, straight to the API server", d.Version), ns: "bench-jvm-direct", image: image})
	if err != nil {
		return nil, fmt.Errorf("(b-jvm): %w", err)
	}
	viaSidecar, err := jvmRun(ctx, env, o, jvmContender{name: fmt.Sprintf("(c-jvm) Spark %s through the sidecar", d.Version), ns: "bench-jvm-sidecar", image: image, injected: true})
	if err != nil {
		return nil, fmt.Errorf("(c-jvm): %w", err)
	}
	r.line("## 4. The real Spark %s driver allocating %d executors", d.Version, o.executors)
	r.line("")
	r.line("A stock Spark %s driver (the pinned distribution playing `%s`) runs as a pod on the pod runner's node: a PySpark program that starts a SparkContext and sleeps, with `spark.executor.instances %d`. Its executors land on kwok's fake nodes, go Running there and never register, so the driver keeps them and waits. (b-jvm) talks straight to kube-apiserver (`spark.master k8s://https://<runner bridge>:<port>`, the runner's proxy to the API server) with its service account's token and the cluster CA (`spark.kubernetes.authenticate.oauthTokenFile`, `caCertFile`), in a namespace that has not opted in, with Spark's default allocation settings (in 4.3.0 a batch of 20 per 1 s; 10 in 4.0). (c-jvm) is the same pod injected by sparklet in an opted-in namespace: the JVM talks to its sidecar with sparklet's defaults. Times are from the first executor's create (the driver pod's start to the first executor is given apart); requests are the API server's `apiserver_request_total` on pods, as in section 3.", d.Version, image, o.executors)
	r.line("")
	r.line("| contender | pod to first executor | all created | all Running | create rate | pod requests during the run | pod requests per idle minute | sidecar peak RSS | driver JVM peak RSS |")
	r.line("|---|---|---|---|---|---|---|---|---|")
	row := func(x result) {
		first, jvmRSS, rss := "n/a (emulator)", "n/a", "n/a"
		if x.jvm {
			first, jvmRSS = x.first.Round(100*time.Millisecond).String(), mib(x.jvmRSSKiB)
		}
		if x.rssKiB > 0 {
			rss = mib(x.rssKiB)
		}
		r.line("| %s | %s | %s | %s | %.0f/s | %s | %s | %s | %s |", x.name, first, x.created.Round(100*time.Millisecond), x.running.Round(100*time.Millisecond),
			float64(o.executors)/x.created.Seconds(), verbs(x.runReqs), idleVerbs(x), rss, jvmRSS)
	}
	var a, b, c *result
	if len(emulated) == 3 {
		a, b, c = &emulated[0], &emulated[1], &emulated[2]
		row(*b)
	}
	row(direct)
	if c != nil {
		row(*c)
	}
	row(viaSidecar)
	r.line("")
	r.line("- (c-jvm) reaches all-Running **%.1f×** faster than (b-jvm).", direct.running.Seconds()/viaSidecar.running.Seconds())
	if a != nil {
		ratio := viaSidecar.running.Seconds() / a.running.Seconds()
		r.line("- (c-jvm) against %s, the bind rate of this cluster (section 3, this run), both from the first create: all Running in %s against %s, **%.2f×** (target at most 1.3×): %s",
			a.name, viaSidecar.running.Round(100*time.Millisecond), a.running.Round(100*time.Millisecond), ratio, map[bool]string{true: "met.", false: "**missed**."}[ratio <= 1.3])
	}
	if b != nil {
		r.line("- The real JVM against the emulator: all created %s (b-jvm) against %s (b), %s (c-jvm) against %s (c).",
			direct.created.Round(100*time.Millisecond), b.created.Round(100*time.Millisecond), viaSidecar.created.Round(100*time.Millisecond), c.created.Round(100*time.Millisecond))
	}
	if viaSidecar.createCount > 0 {
		r.line("- During (c-jvm)'s run the sidecar timed its %.0f creates on the API server at %s each on average (`sparklet_sidecar_executor_create_seconds`).",
			viaSidecar.createCount, time.Duration(viaSidecar.createSum/viaSidecar.createCount*float64(time.Second)).Round(100*time.Microsecond))
	}
	r.line("- Sidecar (c-jvm): %.1f CPU seconds over the run and the idle window.", viaSidecar.cpuSeconds)
	r.line("")
	// The chart's curves start at each contender's first create.
	for _, x := range []*result{&direct, &viaSidecar} {
		for i := range x.series {
			x.series[i].s -= x.first.Seconds()
		}
	}
	return []result{direct, viaSidecar}, nil
}

func mib(kib float64) string { return fmt.Sprintf("%.0f MiB", kib/1024) }

// jvmContender is one real driver's setting.
type jvmContender struct {
	name, ns, image string
	injected        bool
}

func jvmRun(ctx context.Context, env *testenv.Env, o options, jc jvmContender) (result, error) {
	res := result{name: jc.name, jvm: true}
	if err := newNamespace(ctx, env, jc.ns, jc.injected); err != nil {
		return res, err
	}
	conf := fmt.Sprintf("spark.executor.instances %d\n", o.executors) + jvmConf
	if !jc.injected {
		if err := driverAccount(ctx, env, jc.ns); err != nil {
			return res, err
		}
		conf += directConf(env, jc.ns, jc.image)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-driver"}, Data: map[string]string{"wait.py": jvmProgram}}
	pod := jvmPod(jc.image)
	if jc.injected {
		pod.Annotations = map[string]string{"sparklet.io/spark-conf": conf}
	} else {
		// Spark reads spark-defaults.conf from SPARK_CONF_DIR.
		cm.Data["spark-defaults.conf"] = conf
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "SPARK_CONF_DIR", Value: "/opt/bench"})
	}
	if _, err := env.Client.CoreV1().ConfigMaps(jc.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return res, err
	}
	defer jvmCleanup(ctx, env, jc.ns)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	before := podRequests(ctx, env.Client)
	start := time.Now()
	run := watchRunning(runCtx, env.Client, jc.ns, o.executors, start)
	ended, err := driverEnded(runCtx, env, jc.ns)
	if err != nil {
		return res, err
	}
	if _, err := env.Client.CoreV1().Pods(jc.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return res, err
	}
	if err := waitDriver(ctx, env, jc.ns, run.allCreated, ended, 10*time.Minute); err != nil {
		return res, err
	}
	<-run.firstSeen
	var sidecarMetrics string
	if jc.injected {
		p, err := env.Client.CoreV1().Pods(jc.ns).Get(ctx, jvmDriverPod, metav1.GetOptions{})
		if err != nil {
			return res, err
		}
		sidecarMetrics = "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(metricsPort(p))) + "/metrics"
	}
	if err := waitDriver(ctx, env, jc.ns, run.done, ended, 10*time.Minute); err != nil {
		return res, err
	}
	res.first = run.first
	res.created = run.created - run.first
	res.running = run.at - run.first
	res.series = run.series
	if jc.injected {
		ms := scrape(ctx, http.DefaultClient, sidecarMetrics)
		res.createSum, res.createCount = value(ms, "sparklet_sidecar_executor_create_seconds_sum"), value(ms, "sparklet_sidecar_executor_create_seconds_count")
	}
	finish(ctx, env, o, jc.ns, &res, before)
	if jc.injected {
		res.rssKiB, res.cpuSeconds = procStats(runnerPID(env, jc.ns, jvmDriverPod, sidecarContainer))
	}
	res.jvmRSSKiB, _ = procStats(runnerPID(env, jc.ns, jvmDriverPod, sparkContainer))
	return res, nil
}

// waitDriver waits until done is closed, failing early if the driver pod
// ends.
func waitDriver(ctx context.Context, env *testenv.Env, ns string, done <-chan struct{}, ended <-chan corev1.PodPhase, timeout time.Duration) error {
	var err error
	select {
	case <-done:
		return nil
	case phase := <-ended:
		err = fmt.Errorf("the driver pod ended (%s)", phase)
	case <-time.After(timeout):
		err = fmt.Errorf("timed out after %s", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	n, _ := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	return fmt.Errorf("%w; %d executors; driver log:\n%s", err, len(n.Items), cluster.Tail(env.Runner.LogPath(ns, jvmDriverPod, sparkContainer), 30))
}

// driverEnded watches the driver pod (one WATCH, where polling would add
// GETs to the requests measured) and reports its phase if it ends.
func driverEnded(ctx context.Context, env *testenv.Env, ns string) (<-chan corev1.PodPhase, error) {
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + jvmDriverPod})
	if err != nil {
		return nil, err
	}
	ended := make(chan corev1.PodPhase, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
				ended <- p.Status.Phase
				return
			}
		}
	}()
	return ended, nil
}

// metricsPort is the sidecar's metrics port in the injected pod.
func metricsPort(p *corev1.Pod) int {
	for _, c := range p.Spec.InitContainers {
		if c.Name == sidecarContainer {
			for _, port := range c.Ports {
				if port.Name == "metrics" {
					return int(port.ContainerPort)
				}
			}
		}
	}
	return 0
}

// jvmPod is the driver pod, pinned to the pod runner's node: a plain pod
// with the image's entrypoint (`driver` runs spark-submit in client mode
// with the pod IP as bind address).
func jvmPod(image string) *corev1.Pod {
	grace := int64(10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: jvmDriverPod, Labels: map[string]string{"spark-role": "driver"}},
		Spec: corev1.PodSpec{
			NodeName: testenv.RunnerNode, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: sparkContainer, Image: image, Args: []string{"driver", "/opt/bench/wait.py"},
				Env:          []corev1.EnvVar{{Name: "SPARK_DRIVER_BIND_ADDRESS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "bench", MountPath: "/opt/bench", ReadOnly: true}},
				Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
			Volumes: []corev1.Volume{{Name: "bench", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "bench-driver"}}}}},
		},
	}
}

// directConf is what a driver needs to reach the API server on its own,
// from a pod on the runner's node: the runner's proxy as master, the
// service account token and CA the pod has mounted, and what Spark's
// cluster mode would set for it (namespace, pod name, image). The executors
// go to kwok's nodes.
func directConf(env *testenv.Env, ns, image string) string {
	sa := "/var/run/secrets/kubernetes.io/serviceaccount/"
	master := "k8s://https://" + net.JoinHostPort(env.Runner.HostIP(), strconv.Itoa(env.Runner.APIServerPort()))
	lines := []string{
		"spark.master " + master,
		"spark.kubernetes.authenticate.oauthTokenFile " + sa + "token",
		"spark.kubernetes.authenticate.caCertFile " + sa + "ca.crt",
		"spark.kubernetes.namespace " + ns,
		"spark.kubernetes.driver.pod.name " + jvmDriverPod,
		"spark.kubernetes.container.image " + image,
		"spark.driver.host ${env:SPARK_DRIVER_BIND_ADDRESS}",
		"spark.kubernetes.executor.node.selector.type kwok",
	}
	return strings.Join(lines, "\n") + "\n"
}

// driverAccount grants the namespace's default service account what
// Spark's driver needs: executor pods, their ConfigMap, PVCs and Services.
func driverAccount(ctx context.Context, env *testenv.Env, ns string) error {
	all := []string{"get", "list", "watch", "create", "delete", "deletecollection", "patch"}
	_, err := env.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "persistentvolumeclaims", "services"}, Verbs: all},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = env.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "spark-driver"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// jvmCleanup deletes the driver pod, waits until the runner has stopped it,
// and deletes what executors are left.
func jvmCleanup(ctx context.Context, env *testenv.Env, ns string) {
	_ = env.Client.CoreV1().Pods(ns).Delete(ctx, jvmDriverPod, metav1.DeleteOptions{})
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, jvmDriverPod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	cleanup(ctx, env, ns)
}

// runnerPID is the host pid of a running container of the pod runner's, or
// 0 when it does not run.
func runnerPID(env *testenv.Env, ns, pod, container string) int {
	pid, _ := env.Runner.ContainerPID(ns, pod, container)
	return pid
}
