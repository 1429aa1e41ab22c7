package podrunner

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestContainerPID(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("pid", "exec sleep 123")
	create(ctx, t, pod)
	waitPod(ctx, t, pod.Name, "running", func(p *corev1.Pod) bool { return containerStatus(p, "c0").State.Running != nil })
	pid, ok := runner.ContainerPID(namespace, pod.Name, "c0")
	if !ok {
		t.Fatal("no pid for a running container")
	}
	// The shim execs the shell, which execs sleep: one pid throughout.
	var got string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			return false, err
		}
		got = strings.ReplaceAll(string(cmdline), "\x00", " ")
		return strings.Contains(got, "sleep 123"), nil
	})
	if err != nil {
		t.Errorf("pid %d runs %q, want sleep 123: %v", pid, got, err)
	}
	if _, ok := runner.ContainerPID(namespace, pod.Name, "nope"); ok {
		t.Error("a pid for a container the pod lacks")
	}
}
