package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/vocab"
)

// stage is what the drivers run on: the pod runner or the real node.
type stage struct {
	kube       kubectlRunner
	client     kubernetes.Interface
	kubeconfig string
	// policy is the file the webhook's policy came from, as shown.
	policy string
	// checkArgs are sparklet check's flags that find that policy.
	checkArgs []string
	// driverLog is a container's log and how the demo read it.
	driverLog func(ctx context.Context, pod *corev1.Pod, container string) (log, how string)
}

// runDrivers applies the example driver pod and Job in the opted-in
// namespace, follows both to the end and shows their results, cleanup and a
// pod the policy refuses.
func runDrivers(ctx context.Context, s *stage, bin string, d spark.Dist) error {
	start := time.Now()
	pod, err := applyDriverPod(ctx, s, d)
	if err != nil {
		return err
	}
	jobPod, err := applyJob(ctx, s, d)
	if err != nil {
		return err
	}
	step("Running both: each sidecar first, then the stock Spark %s driver, which asks its sidecar for executors", d.Version)
	say("time since the pod was applied, driver pod, what happened:")
	drivers := []*corev1.Pod{pod, jobPod}
	containers := []string{sparkContainer(pod), sparkContainer(jobPod)}
	bounded, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	runs, err := followAll(bounded, s.client, drivers, containers, start)
	if err != nil {
		return err
	}

	step("spark-pi's result and cleanup")
	if err := report(ctx, s, pod, runs[0]); err != nil {
		return err
	}
	kubectl(ctx, s.kube, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+pod.Name+",source=sparklet-sidecar",
		"-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--sort-by=.lastTimestamp")
	sparkletCheck(ctx, s, bin, pod.Name, "-n", ns)

	step("The Job's result and cleanup")
	if err := report(ctx, s, jobPod, runs[1]); err != nil {
		return err
	}
	if err := jobCompleted(ctx, s); err != nil {
		return err
	}

	step("A driver the policy refuses: examples/refused-pod.yaml asks for 200 executors (limit 100)")
	kubectl(ctx, s.kube, "apply", "-n", ns, "-f", "examples/refused-pod.yaml")
	return nil
}

// done ends the demo's walkthrough; with keep, it waits for Ctrl-C.
func done(ctx context.Context, s *stage, keep bool) {
	step("Done")
	say("kubectl get pod spark-pi -n %s -o yaml shows the whole injected pod; the same, offline:", ns)
	say("go run ./cmd/sparklet inject -f examples/spark-pi-pod.yaml --policy %s", s.policy)
	if keep {
		say("everything keeps running until Ctrl-C:")
		say("export KUBECONFIG=%s", s.kubeconfig)
		say("kubectl get pods -n %s", ns)
		<-ctx.Done()
	}
}

// applyDriverPod applies examples/spark-pi-pod.yaml and shows what the
// webhook injected.
func applyDriverPod(ctx context.Context, s *stage, d spark.Dist) (*corev1.Pod, error) {
	manifest, err := os.ReadFile("examples/spark-pi-pod.yaml")
	if err != nil {
		return nil, err
	}
	step("Applying a plain driver pod: examples/spark-pi-pod.yaml, on the newest pinned Spark")
	say("image apache/spark:%s and its examples jar in place of the file's (hack/spark/versions)", d.Version)
	kubectlIn(ctx, s.kube, d.Retarget(manifest), "   # examples/spark-pi-pod.yaml", "apply", "-n", ns, "-f", "-")
	pod, err := s.client.CoreV1().Pods(ns).Get(ctx, "spark-pi", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	showInjected(pod)
	return pod, nil
}

// applyJob applies examples/spark-pi-job.yaml and returns the Job's pod.
func applyJob(ctx context.Context, s *stage, d spark.Dist) (*corev1.Pod, error) {
	manifest, err := os.ReadFile("examples/spark-pi-job.yaml")
	if err != nil {
		return nil, err
	}
	step("The same driver as a Job, at the same time: examples/spark-pi-job.yaml, image apache/spark:%s", d.Version)
	kubectlIn(ctx, s.kube, d.Retarget(manifest), "   # examples/spark-pi-job.yaml", "apply", "-n", ns, "-f", "-")
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := s.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=spark-pi-job"})
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
func jobCompleted(ctx context.Context, s *stage) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := s.client.BatchV1().Jobs(ns).Get(ctx, "spark-pi-job", metav1.GetOptions{})
		return err == nil && jobComplete(job), nil
	})
	if err != nil {
		return fmt.Errorf("the Job never completed: %w", err)
	}
	kubectl(ctx, s.kube, "get", "job", "spark-pi-job", "-n", ns)
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
func report(ctx context.Context, s *stage, pod *corev1.Pod, r *run) error {
	var st patches.Status
	_ = json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st)
	logText, how := s.driverLog(ctx, pod, st.SparkContainer)
	if r.Pod.Status.Phase != corev1.PodSucceeded {
		return fmt.Errorf("driver pod %s %s; its log (%s) ends:\n%s", pod.Name, r.Pod.Status.Phase, how, lastLines(logText, 30))
	}
	pi := regexp.MustCompile(`Pi is roughly [0-9.]+`).FindString(logText)
	if pi == "" {
		return fmt.Errorf("no %q in the driver's log (%s)", "Pi is roughly", how)
	}
	say("the driver printed: %s   (%d executors; %s)", pi, r.Executors, how)
	kubectl(ctx, s.kube, "get", "pod", pod.Name, "-n", ns, "-o", "wide")

	if err := noLeftovers(ctx, s.client, st.AppID); err != nil {
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
	kubectl(ctx, s.kube, "get", "pods,configmaps,pvc", "-n", ns, "-l", "spark-role!=driver,"+vocab.LabelAppID+"="+st.AppID)
	return nil
}

// noLeftovers checks that the application has no executor pod, ConfigMap
// or PVC left.
func noLeftovers(ctx context.Context, client kubernetes.Interface, appID string) error {
	sel := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID}
	exec := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID + "," + vocab.LabelRole + "!=driver"}
	pods, err := client.CoreV1().Pods(ns).List(ctx, exec)
	if err != nil {
		return err
	}
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
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
func credentialsSecret(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "object-store-keys"},
		StringData: map[string]string{"access-key": "demo-access-key", "secret-key": "demo-secret-key"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret object-store-keys: %w", err)
	}
	return nil
}

// newestSparkAsRoot is newestSpark for a demo that needs root: without it,
// the error says why and which make target to run as root.
func newestSparkAsRoot(bin, why, target string) (spark.Dist, error) {
	if os.Geteuid() != 0 {
		return spark.Dist{}, fmt.Errorf("%s. Run make %s as root, or `go run ./hack/demo --emulator` for the demo without JVMs", why, target)
	}
	return newestSpark(bin)
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
