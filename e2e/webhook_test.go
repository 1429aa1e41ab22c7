package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/patches"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/vocab"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace of the test's own.
func namespace(t *testing.T, optIn bool) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-")
	if err := env.CreateNamespace(ctxFor(t), name, optIn); err != nil {
		t.Fatal(err)
	}
	return name
}

func examplePod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	return fixtures.LoadPod(t, "../examples/"+file)
}

func requireInjected(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if problems := verify.Driver(pod); len(problems) > 0 {
		t.Fatalf("pod %s/%s is not a proper driver:\n- %s", pod.Namespace, pod.Name, strings.Join(problems, "\n- "))
	}
}

func requireUntouched(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, ok := pod.Annotations[vocab.AnnotationStatus]; ok || len(pod.Spec.InitContainers) > 0 {
		t.Fatalf("pod %s/%s was injected but should not have been", pod.Namespace, pod.Name)
	}
}

func TestDriverPodIsInjected(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := env.Client.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireInjected(t, stored)
	conf, _ := patches.EffectiveConf(stored.Annotations)
	if conf["spark.kubernetes.namespace"] != ns || conf["spark.executor.instances"] != "2" {
		t.Errorf("effective conf = %v", conf)
	}
	// The pod is scheduled onto a kwok node, which reports it running.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Errorf("injected driver pod did not reach Running on a kwok node: %v", err)
	}
}

func TestOtherPodsAreUntouched(t *testing.T) {
	ctx := ctxFor(t)
	optedIn, notOptedIn := namespace(t, true), namespace(t, false)+"-no"
	if err := env.CreateNamespace(ctx, notOptedIn, false); err != nil {
		t.Fatal(err)
	}
	plain := examplePod(t, "spark-pi-pod.yaml")
	delete(plain.Labels, "spark-role")
	p, err := env.Client.CoreV1().Pods(optedIn).Create(ctx, plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireUntouched(t, p)

	p, err = env.Client.CoreV1().Pods(notOptedIn).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireUntouched(t, p)

	optedOut := examplePod(t, "spark-pi-pod.yaml")
	optedOut.Annotations[vocab.AnnotationInject] = "false"
	optedOut.Name = "opted-out"
	p, err = env.Client.CoreV1().Pods(optedIn).Create(ctx, optedOut, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireUntouched(t, p)
}

func TestJobPodIsInjected(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	data, err := os.ReadFile("../examples/spark-pi-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		pod = &pods.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("the Job controller created no pod: %v", err)
	}
	requireInjected(t, pod)
	if pod.GenerateName == "" || !strings.HasPrefix(pod.Name, pod.GenerateName) {
		t.Errorf("expected a generateName pod, got name %q generateName %q", pod.Name, pod.GenerateName)
	}
}

func TestDryRunReturnsInjectedPodAndCreatesNothing(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	out, stderr, err := env.Kubectl(ctx, nil, "apply", "--dry-run=server", "-n", ns, "-o", "yaml", "-f", "../examples/spark-pi-pod.yaml")
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, stderr)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal([]byte(out), &pod); err != nil {
		t.Fatal(err)
	}
	requireInjected(t, &pod)
	_, err = env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("dry run created the pod (get: %v)", err)
	}
}

func TestRefusalReachesKubectl(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	_, stderr, err := env.Kubectl(ctx, nil, "apply", "-n", ns, "-f", "../examples/refused-pod.yaml")
	if err == nil {
		t.Fatal("kubectl apply of a pod over the executor limit succeeded")
	}
	for _, want := range []string{"denied the request", "spark.executor.instances=200", "limits.maxExecutors=100"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error does not contain %q:\n%s", want, stderr)
		}
	}
}

// TestFailClosed stops the webhook: driver pods are then rejected, while
// other pods and the webhook's own namespace are unaffected.
func TestFailClosed(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	env.StopWebhook()
	t.Cleanup(func() {
		if err := env.StartWebhook(context.Background()); err != nil {
			t.Fatalf("restart webhook: %v", err)
		}
	})
	_, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("a driver pod was admitted with the webhook down (err = %v)", err)
	}
	plain := examplePod(t, "spark-pi-pod.yaml")
	delete(plain.Labels, "spark-role")
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Errorf("a non-driver pod was blocked by the down webhook: %v", err)
	}
	own := examplePod(t, "spark-pi-pod.yaml")
	own.Name = "in-webhook-namespace"
	if _, err := env.Client.CoreV1().Pods(testenv.WebhookNamespace).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Errorf("the webhook's own namespace was blocked by the down webhook: %v", err)
	}
}

func TestCertificateRotation(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	before, err := env.ServedCert()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.IssueCert(); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		now, err := env.ServedCert()
		return err == nil && now.SerialNumber.Cmp(before.SerialNumber) != 0, nil
	})
	if err != nil {
		t.Fatalf("the webhook still serves the old certificate: %v", err)
	}
	p, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("admission after rotation: %v", err)
	}
	requireInjected(t, p)
}

func TestFetchAnnotationGetsTheInitContainer(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	pod := examplePod(t, "spark-pi-pod.yaml")
	pod.Annotations["sparklet.io/fetch"] = "- url: https://repo.example.com/libs/udfs-1.0.jar\n  sha256: \"" + strings.Repeat("ab", 32) + "\"\n"
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireInjected(t, created)
	var init *corev1.Container
	for i := range created.Spec.InitContainers {
		if created.Spec.InitContainers[i].Name == patches.InitName {
			init = &created.Spec.InitContainers[i]
		}
	}
	if init == nil || init.Args[0] != "init" {
		t.Fatalf("no %s init container: %+v", patches.InitName, created.Spec.InitContainers)
	}
	conf, _ := patches.EffectiveConf(created.Annotations)
	if conf["spark.jars"] != "file:///opt/sparklet/deps/udfs-1.0.jar" {
		t.Errorf("spark.jars = %q", conf["spark.jars"])
	}
	bad := examplePod(t, "spark-pi-pod.yaml")
	bad.Name = "bad-fetch"
	bad.Annotations["sparklet.io/fetch"] = "ftp://repo.example.com/x.jar"
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "the scheme must be http or https") {
		t.Errorf("a bad fetch annotation was not refused: %v", err)
	}
}
