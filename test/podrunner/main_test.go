package podrunner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/cluster"
)

// The end-to-end tests run a control plane and a runner whose pods run
// here. They run when SPARKLET_E2E=1 (make test sets it), as root, and then
// fail, rather than skip, if the control-plane binaries are missing.
var (
	runner *Runner
	cp     *cluster.Cluster
	client kubernetes.Interface
)

const (
	nodeName   = "podrunner-1"
	shellImage = "local/shell"
	namespace  = "default"
)

// testImages maps local/shell, and apache/spark images (for a driver pod
// without a JVM), to the host's own /bin/sh: its command and args run as
// written, /bin/sh when it has no command, as an image with
// CMD ["/bin/sh"] would. The sparklet image runs SPARKLET_BIN_DIR/sparklet,
// its ENTRYPOINT.
func testImages(image string) (*Image, error) {
	if image == policy.DefaultSidecarImage(version.Version) {
		bin := filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet")
		return &Image{Entrypoint: func(_, args, env []string) ([]string, []string, error) {
			return append([]string{bin}, args...), env, nil
		}}, nil
	}
	if image != shellImage && !strings.HasPrefix(image, "apache/spark:") {
		return nil, fmt.Errorf("image %q has no local mapping", image)
	}
	return &Image{
		Env:        []string{"PATH=/usr/bin:/bin", "IMAGE_ONLY=from-image", "OVERRIDDEN=image"},
		WorkingDir: "/tmp",
		Entrypoint: func(command, args, env []string) ([]string, []string, error) {
			if len(command) == 0 {
				command = []string{"/bin/sh"}
			}
			return append(append([]string(nil), command...), args...), env, nil
		},
	}, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("SPARKLET_E2E") != "1" || testing.Short() {
		os.Exit(m.Run()) // the unit tests; the e2e tests skip themselves
	}
	os.Exit(runE2E(m))
}

func runE2E(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "podrunner e2e: must run as root (network and mount namespaces)")
		return 1
	}
	dir, err := os.MkdirTemp("", "sparklet-podrunner-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code, err := withCluster(dir, m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podrunner e2e: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "podrunner e2e: control-plane, runner and container logs kept in %s\n", dir)
	}
	return code
}

func withCluster(dir string, m *testing.M) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runLog, err := os.Create(filepath.Join(dir, "podrunner.log"))
	if err != nil {
		return 0, err
	}
	defer runLog.Close()
	runner, err = New(Options{NodeName: nodeName, Dir: filepath.Join(dir, "runner"), Images: testImages,
		Log: runLog, SyncPeriod: 2 * time.Second})
	if err != nil {
		return 0, err
	}
	defer runner.Stop()
	cp, err = cluster.Start(ctx, cluster.Options{BinDir: os.Getenv("SPARKLET_BIN_DIR"),
		Dir: filepath.Join(dir, "cluster"), ExtraSANs: []string{runner.HostIP()}})
	if err != nil {
		return 0, err
	}
	defer cp.Stop()
	client = cp.Client()
	if err := runner.Start(ctx, cp.RESTConfig()); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func e2e(t *testing.T) context.Context {
	t.Helper()
	if runner == nil {
		t.Skip("set SPARKLET_E2E=1 and SPARKLET_BIN_DIR to run pods on a local control plane (make test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// shellPod is a pod on the runner's node whose containers run scripts.
func shellPod(name string, scripts ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       corev1.PodSpec{NodeName: nodeName, RestartPolicy: corev1.RestartPolicyNever},
	}
	for i, s := range scripts {
		pod.Spec.Containers = append(pod.Spec.Containers, shellContainer(fmt.Sprintf("c%d", i), s))
	}
	return pod
}

func shellContainer(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: shellImage, Command: []string{"/bin/sh", "-c", script}}
}

func create(ctx context.Context, t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	return created
}

// waitPod waits until cond holds for the pod and returns it; on timeout,
// or if the pod ends without cond holding, it fails with the pod's status
// and its containers' logs.
func waitPod(ctx context.Context, t *testing.T, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		if cond(p) {
			return true, nil
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, errors.New("the pod ended") // a terminal phase is final
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s: waiting for %s: %v\n%s", name, what, err, describe(last))
	}
	return last
}

func phase(want corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == want }
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "(no pod)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s %s, podIP %s\n", p.Status.Phase, p.Status.Message, p.Status.PodIP)
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			fmt.Fprintf(&b, "container %s: %+v (restarts %d)\n--- log:\n%s\n", s.Name, s.State, s.RestartCount, logOf(p.Name, s.Name))
		}
	}
	return b.String()
}

func logOf(pod, container string) string {
	data, err := os.ReadFile(runner.LogPath(namespace, pod, container))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return string(data)
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			if s.Name == name {
				return s
			}
		}
	}
	return corev1.ContainerStatus{}
}
