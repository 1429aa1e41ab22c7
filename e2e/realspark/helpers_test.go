package realspark

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/sparklog"
)

// namespace creates an opted-in namespace of the test's own, with the
// Secret the policy's credentials name.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.CreateNamespace(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	return name
}

// example reads a file of examples/ with the image and the examples jar of
// dist in place of the ones it names.
func example(t *testing.T, file string, d spark.Dist) []byte {
	t.Helper()
	return fixtures.ExampleFor(t, "../../examples/"+file, d.Version, d.Scala)
}

// kubectl runs kubectl against the cluster and fails the test on error.
func kubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, err := env.Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// waitPod waits until cond holds for the pod, and returns it.
func waitPod(t *testing.T, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never %s: %v\nstatus: %+v\n%s", ns, name, what, err, podStatus(last), driverLogTail(ns, name))
	}
	return last
}

func podStatus(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return struct {
		Phase      corev1.PodPhase
		Init, Main []corev1.ContainerStatus
	}{p.Status.Phase, p.Status.InitContainerStatuses, p.Status.ContainerStatuses}
}

func phaseIs(phases ...corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true
			}
		}
		return false
	}
}

// containerRunning is true once the named container runs.
func containerRunning(name string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == name && s.State.Running != nil {
				return true
			}
		}
		return false
	}
}

// log returns a container's log as the pod runner kept it.
func log(ns, pod, container string) string {
	data, _ := os.ReadFile(env.Runner.LogPath(ns, pod, container))
	return string(data)
}

func driverLogTail(ns, pod string) string {
	var b strings.Builder
	for _, c := range []string{"spark", patches.SidecarName} {
		b.WriteString("--- " + c + " log (tail):\n" + tail(log(ns, pod, c), 40) + "\n")
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// piValue parses the value SparkPi printed.
func piValue(t *testing.T, logText string) float64 {
	t.Helper()
	v, ok := sparklog.Pi(logText)
	if !ok {
		t.Fatalf("no %q line in the driver's log", "Pi is roughly")
	}
	return v
}

// waitClean waits until nothing of the application is left and returns
// when that was first seen.
func waitClean(t *testing.T, ns, appID string, timeout time.Duration) time.Time {
	t.Helper()
	return executors.WaitClean(t, env.Client, ns, appID, timeout)
}
