package realspark

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// TestConnectServerRestart runs examples/connect-deployment.yaml, a Spark
// Connect server as a Deployment, on the newest pin and kills its JVM with
// SIGKILL once its two executors run. The container restarts in place; the
// first JVM's executors are gone within 5 s, and the new JVM runs an
// application of its own (another spark-app-selector) whose executors have
// other names, while the sidecar keeps running. Deleting the Deployment
// stops the server's JVM with SIGTERM, which stops its SparkContext, and
// leaves no executor.
func TestConnectServerRestart(t *testing.T) {
	d := dists[len(dists)-1]
	ns := namespace(t)
	execs := trackExecutors(t, ns)
	kubectl(t, example(t, "connect-deployment.yaml", d), "apply", "-n", ns, "-f", "-")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), nil, "delete", "deployment", "spark-connect", "-n", ns, "--wait=false")
	})

	pod := connectPod(t, ns)
	podApp := pod.Labels[vocab.LabelAppID]
	first := waitConnectApp(t, ns, pod.Name, podApp, "", 2)
	waitServerStarted(t, ns, pod.Name, 1)
	waitConnectService(t, ns, pod)

	killed := time.Now()
	killJVM(t, ns, pod.Name, first, "Spark "+d.Version+": the first JVM's executors")

	second := waitConnectApp(t, ns, pod.Name, podApp, first, 2)
	waitServerStarted(t, ns, pod.Name, 2)
	t.Logf("Spark %s: the restarted JVM runs application %s (the first ran %s), %v after the kill", d.Version, second, first,
		time.Since(killed).Round(time.Millisecond))
	names := map[string]string{}
	for _, p := range execs.Pods() {
		if app, seen := names[p.Name]; seen && app != p.Labels[vocab.LabelAppID] {
			t.Errorf("executor name %s used by applications %s and %s", p.Name, app, p.Labels[vocab.LabelAppID])
		}
		names[p.Name] = p.Labels[vocab.LabelAppID]
	}
	now, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := restarts(now.Status.ContainerStatuses, "spark"); n != 1 {
		t.Errorf("the Spark container restarted %d times, want 1", n)
	}
	if n := restarts(now.Status.InitContainerStatuses, patches.SidecarName); n != 0 {
		t.Errorf("the sidecar restarted %d times, want 0: it must outlive the JVM\n%s", n, driverLogTail(ns, pod.Name))
	}

	// A rollout or scale-down ends the pod: SIGTERM reaches the JVM, which
	// stops its SparkContext, and nothing of the pod's applications is left.
	kubectl(t, nil, "delete", "deployment", "spark-connect", "-n", ns, "--wait=false")
	waitPodGone(t, ns, pod.Name, 2*time.Minute)
	waitClean(t, ns, second, 30*time.Second)
	waitConnectServiceGone(t, ns, pod.Name)
	if stopped := "Successfully stopped SparkContext"; !strings.Contains(log(ns, pod.Name, "spark"), stopped) {
		t.Errorf("the server's log does not say %q after its pod was deleted\n%s", stopped, driverLogTail(ns, pod.Name))
	}
}

// connectPod waits for the Deployment's one pod to run its Spark container.
func connectPod(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	return connectPodWhere(t, ns, "ran its Spark container", containerRunning("spark"))
}

// connectPodWhere waits until the Deployment has one pod and cond holds
// for it.
func connectPodWhere(t *testing.T, ns, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spark-connect"})
		if err != nil || len(list.Items) != 1 {
			return false, nil
		}
		pod = &list.Items[0]
		return cond(pod), nil
	})
	if err != nil {
		t.Fatalf("the Deployment's pod never %s: %v\nstatus: %+v", what, err, podStatus(pod))
	}
	return pod
}

// waitConnectApp waits until n executors of one application other than
// not run for the driver pod whose spark-app-selector is podApp, and
// returns that application.
func waitConnectApp(t *testing.T, ns, pod, podApp, not string, n int) string {
	t.Helper()
	var app string
	running := map[string]int{}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			LabelSelector: vocab.LabelDriverApp + "=" + podApp + "," + vocab.LabelRole + "=executor"})
		if err != nil {
			return false, nil
		}
		clear(running)
		for _, p := range list.Items {
			if a := p.Labels[vocab.LabelAppID]; a != not && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running[a]++
				if running[a] >= n {
					app = a
				}
			}
		}
		return app != "", nil
	})
	if err != nil {
		t.Fatalf("never %d running executors of an application other than %q: %v (running: %v)\n%s", n, not, err, running, driverLogTail(ns, pod))
	}
	return app
}

// waitServerStarted waits until the pod's Spark container has logged the
// start of n Connect servers (SparkConnectServer.main, 4.3.0), and logs
// how long that took. The wait covers a JVM's boot and its SparkContext,
// which waits up to 30 s for executors (maxRegisteredResourcesWaitingTime):
// alone about a minute, and in make test, beside the other parallel tests'
// JVMs and e2e/node, once over two (the driver's first log line a minute
// after its sidecar listened); it gets as long as waitConnectApp's.
func waitServerStarted(t *testing.T, ns, pod string, n int) {
	t.Helper()
	const started = "Spark Connect server started at"
	from := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 4*time.Minute, true, func(context.Context) (bool, error) {
		return strings.Count(log(ns, pod, "spark"), started) >= n, nil
	})
	if err != nil {
		t.Fatalf("the log does not say %q %d times\n%s", started, n, driverLogTail(ns, pod))
	}
	t.Logf("%s: Connect server %d started %v after the wait began", pod, n, time.Since(from).Round(time.Second))
}

func restarts(statuses []corev1.ContainerStatus, name string) int32 {
	for _, s := range statuses {
		if s.Name == name {
			return s.RestartCount
		}
	}
	return -1
}

// waitPodGone waits until the pod object is deleted.
func waitPodGone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s still there after %v\n%s", ns, name, timeout, driverLogTail(ns, name))
	}
}
