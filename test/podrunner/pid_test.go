package podrunner

import (
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(string(cmdline), "\x00", " "); !strings.Contains(got, "sleep 123") {
		t.Errorf("pid %d runs %q, want sleep 123", pid, got)
	}
	if _, ok := runner.ContainerPID(namespace, pod.Name, "nope"); ok {
		t.Error("a pid for a container the pod lacks")
	}
}
