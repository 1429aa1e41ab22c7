package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/vocab"
)

// runReal is the default demo: the example driver pod and Job run on the
// newest pinned Spark, as local processes of the pod runner. Everything
// stops when it ends (with keep, on Ctrl-C): the runner lives in this
// process.
func runReal(ctx context.Context, bin, dir string, keep bool) error {
	if os.Geteuid() != 0 {
		return errors.New("the pod runner needs root: it gives each pod a network namespace of its own on a bridge it creates. " +
			"Run make demo as root, or `go run ./hack/demo --emulator` for the demo without JVMs")
	}
	d, err := newestSpark(bin)
	if err != nil {
		return err
	}
	steps, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()

	step("Starting a local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and the pod runner")
	start := time.Now()
	policy, _ := filepath.Abs("examples/policy.yaml")
	env, err := testenv.Start(steps, testenv.Options{BinDir: bin, Dir: dir, PolicyFile: policy, PodRunner: true})
	if err != nil {
		return err
	}
	defer stopAll(env, dir, keep)
	say("up in %s", time.Since(start).Round(100*time.Millisecond))
	say("the pod runner plays the kubelet for node %s: each pod runs as local processes in a network", testenv.RunnerNode)
	say("namespace of its own, pod IP on bridge %s/24 (docs/pod-runner.md); apache/spark:<version> images run", env.Runner.HostIP())
	say("the pinned Spark distribution of their line from %s (docs/real-spark.md)", filepath.Join(bin, "spark"))
	say("sparklet webhook: %s, policy %s", env.Addr(), "examples/policy.yaml")
	say("registered like the Helm chart: pods CREATE, objectSelector spark-role=driver,")
	say("namespaceSelector sparklet.io/inject=enabled, failurePolicy Fail, %s and kube-system excluded", testenv.WebhookNamespace)

	step("Opting in namespace %s", ns)
	if err := env.CreateNamespace(steps, ns, true); err != nil {
		return err
	}
	if err := credentialsSecret(steps, env); err != nil {
		return err
	}
	kubectl(steps, env, "get", "namespace", ns, "--show-labels")
	say("and the Secret object-store-keys, which examples/policy.yaml's credentials hand to drivers and executors")
	sparkletCheck(steps, env, bin, "-n", ns)

	start = time.Now()
	pod, err := applyDriverPod(steps, env, d)
	if err != nil {
		return err
	}
	jobPod, err := applyJob(steps, env, d)
	if err != nil {
		return err
	}
	step("Running both: each sidecar first, then the stock Spark %s driver, which asks its sidecar for executors", d.Version)
	say("time since the pod was applied, driver pod, what happened:")
	drivers := []*corev1.Pod{pod, jobPod}
	containers := []string{sparkContainer(pod), sparkContainer(jobPod)}
	bounded, cancel := context.WithTimeout(steps, 4*time.Minute)
	defer cancel()
	runs, err := followAll(bounded, env.Client, drivers, containers, start)
	if err != nil {
		return err
	}

	step("spark-pi's result and cleanup")
	if err := report(steps, env, pod, runs[0]); err != nil {
		return err
	}
	kubectl(steps, env, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+pod.Name+",source=sparklet-sidecar",
		"-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--sort-by=.lastTimestamp")
	sparkletCheck(steps, env, bin, pod.Name, "-n", ns)

	step("The Job's result and cleanup")
	if err := report(steps, env, jobPod, runs[1]); err != nil {
		return err
	}
	if err := jobCompleted(steps, env); err != nil {
		return err
	}

	step("A driver the policy refuses: examples/refused-pod.yaml asks for 200 executors (limit 100)")
	kubectl(steps, env, "apply", "-n", ns, "-f", "examples/refused-pod.yaml")

	step("Done")
	say("kubectl get pod %s -n %s -o yaml shows the whole injected pod; the same, offline:", pod.Name, ns)
	say("go run ./cmd/sparklet inject -f examples/spark-pi-pod.yaml --policy examples/policy.yaml")
	if keep {
		say("everything keeps running until Ctrl-C:")
		say("export KUBECONFIG=%s", env.Cluster.Kubeconfig())
		say("kubectl get pods -n %s", ns)
		<-ctx.Done()
	}
	return nil
}

// stopAll stops the pod runner (its pods, their namespaces and the bridge),
// the webhook and the control plane.
func stopAll(env *testenv.Env, dir string, keep bool) {
	step("Stopping the pod runner, the webhook and the control plane (they live in this process)")
	start := time.Now()
	hostIP := env.Runner.HostIP()
	env.Stop()
	if bridgeLeft(hostIP) {
		say("the pod runner's bridge (%s) is still there; make cluster-down removes it", hostIP)
	} else {
		say("stopped in %s; the pods' processes, network namespaces and the bridge are gone", time.Since(start).Round(100*time.Millisecond))
	}
	say("logs: %s (pods/logs/<namespace>_<pod>_<uid>/<container>.log, podrunner.log, webhook.log, cluster/logs/)", dir)
	if !keep {
		say("hack/demo.sh --keep leaves everything running until Ctrl-C, to look around with kubectl")
	}
}

// bridgeLeft reports whether an interface of the host still has ip.
func bridgeLeft(ip string) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, ok := a.(*net.IPNet); ok && p.IP.String() == ip {
			return true
		}
	}
	return false
}

// applyDriverPod applies examples/spark-pi-pod.yaml and shows what the
// webhook injected.
func applyDriverPod(ctx context.Context, env *testenv.Env, d spark.Dist) (*corev1.Pod, error) {
	manifest, err := example("examples/spark-pi-pod.yaml", d)
	if err != nil {
		return nil, err
	}
	step("Applying a plain driver pod: examples/spark-pi-pod.yaml, on the newest pinned Spark")
	say("image apache/spark:%s and its examples jar in place of the file's (hack/spark/versions)", d.Version)
	kubectlIn(ctx, env, manifest, "   # examples/spark-pi-pod.yaml", "apply", "-n", ns, "-f", "-")
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, "spark-pi", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	showInjected(pod)
	return pod, nil
}

// applyJob applies examples/spark-pi-job.yaml and returns the Job's pod.
func applyJob(ctx context.Context, env *testenv.Env, d spark.Dist) (*corev1.Pod, error) {
	manifest, err := example("examples/spark-pi-job.yaml", d)
	if err != nil {
		return nil, err
	}
	step("The same driver as a Job, at the same time: examples/spark-pi-job.yaml, image apache/spark:%s", d.Version)
	kubectlIn(ctx, env, manifest, "   # examples/spark-pi-job.yaml", "apply", "-n", ns, "-f", "-")
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=spark-pi-job"})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		pod = &pods.Items[0]
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the Job created no pod: %w", err)
	}
	conf, _ := patches.EffectiveConf(pod.Annotations)
	say("the Job controller created %s (it had only generateName %q at admission);", pod.Name, pod.GenerateName)
	say("Spark learns the name at run time: spark.kubernetes.driver.pod.name %s", conf["spark.kubernetes.driver.pod.name"])
	say("problems found by verify.Driver: %d", len(verify.Driver(pod)))
	return pod, nil
}

// jobCompleted waits for the Job to complete and shows it.
func jobCompleted(ctx context.Context, env *testenv.Env) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := env.Client.BatchV1().Jobs(ns).Get(ctx, "spark-pi-job", metav1.GetOptions{})
		return err == nil && jobComplete(job), nil
	})
	if err != nil {
		return fmt.Errorf("the Job never completed: %w", err)
	}
	kubectl(ctx, env, "get", "job", "spark-pi-job", "-n", ns)
	say("the native sidecar exited after the driver, so the pod, and with it the Job, completed")
	return nil
}

func jobComplete(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func sparkContainer(pod *corev1.Pod) string {
	var st patches.Status
	_ = json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st)
	return st.SparkContainer
}

// report shows a finished driver's result and checks that nothing of its
// application is left.
func report(ctx context.Context, env *testenv.Env, pod *corev1.Pod, r *run) error {
	var st patches.Status
	_ = json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st)
	logFile := env.Runner.LogPath(ns, pod.Name, st.SparkContainer)
	logText, _ := os.ReadFile(logFile)
	if r.Pod.Status.Phase != corev1.PodSucceeded {
		return fmt.Errorf("driver pod %s %s; its log %s ends:\n%s", pod.Name, r.Pod.Status.Phase, logFile, lastLines(string(logText), 30))
	}
	pi := regexp.MustCompile(`Pi is roughly [0-9.]+`).FindString(string(logText))
	if pi == "" {
		return fmt.Errorf("no %q in the driver's log %s", "Pi is roughly", logFile)
	}
	say("the driver printed: %s   (%d executors; its log: %s)", pi, r.Executors, logFile)
	kubectl(ctx, env, "get", "pod", pod.Name, "-n", ns)

	if err := noLeftovers(ctx, env, st.AppID); err != nil {
		return err
	}
	switch gone := r.LastGone.Sub(r.DriverEnded).Round(10 * time.Millisecond); {
	case r.LastGone.IsZero():
		say("the application made no executor pod or ConfigMap that outlived it")
	case gone <= 0:
		say("Spark's own stop() deleted its executors and ConfigMap %s before the Spark container exited;", -gone)
		say("the sidecar then removes whatever a JVM that dies without stop() leaves (the CleanedUp event)")
	default:
		say("the application's last executor or ConfigMap was gone %s after the Spark container ended", gone)
	}
	kubectl(ctx, env, "get", "pods,configmaps,pvc", "-n", ns, "-l", "spark-role!=driver,"+vocab.LabelAppID+"="+st.AppID)
	return nil
}

// noLeftovers checks that the application has no executor pod, ConfigMap
// or PVC left.
func noLeftovers(ctx context.Context, env *testenv.Env, appID string) error {
	sel := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID}
	exec := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID + "," + vocab.LabelRole + "!=driver"}
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, exec)
	if err != nil {
		return err
	}
	cms, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	pvcs, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	if n := len(pods.Items) + len(cms.Items) + len(pvcs.Items); n > 0 {
		return fmt.Errorf("application %s left %d executor pods, %d ConfigMaps and %d PVCs behind", appID, len(pods.Items), len(cms.Items), len(pvcs.Items))
	}
	return nil
}

// credentialsSecret creates the Secret examples/policy.yaml's credentials
// name; the runner, like the kubelet, starts no container whose env
// refers to a missing Secret.
func credentialsSecret(ctx context.Context, env *testenv.Env) error {
	_, err := env.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "object-store-keys"},
		StringData: map[string]string{"access-key": "demo-access-key", "secret-key": "demo-secret-key"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret object-store-keys: %w", err)
	}
	return nil
}

// newestSpark is the newest pinned distribution, which must be installed.
func newestSpark(bin string) (spark.Dist, error) {
	dists, err := spark.Pinned()
	if err != nil {
		return spark.Dist{}, err
	}
	d := dists[len(dists)-1]
	return d, d.Installed(bin)
}

// example reads an example manifest with the image and the examples jar of
// d in place of the ones it names.
func example(file string, d spark.Dist) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	text := regexp.MustCompile(`apache/spark:[0-9.]+`).ReplaceAllString(string(data), "apache/spark:"+d.Version)
	text = regexp.MustCompile(`spark-examples_[0-9.]+-[0-9.]+\.jar`).ReplaceAllString(text, "spark-examples_"+d.Scala+"-"+d.Version+".jar")
	return []byte(text), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
