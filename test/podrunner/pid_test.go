package podrunner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestPID(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("pid", "echo ready; exec sleep 600", "echo ready; exec sleep 600")
	create(ctx, t, pod)
	waitLog(ctx, t, pod.Name, "c0", "ready")
	waitLog(ctx, t, pod.Name, "c1", "ready")
	pids := map[string]int{}
	for _, c := range []string{"c0", "c1"} {
		pid := runner.PID(namespace, pod.Name, c)
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if pid == 0 || err != nil || !strings.HasPrefix(string(cmdline), "sleep\x00600") {
			t.Errorf("PID of %s: %d, command line %q (%v); want the container's sleep", c, pid, cmdline, err)
		}
		pids[c] = pid
	}
	if pids["c0"] == pids["c1"] {
		t.Errorf("both containers have pid %d", pids["c0"])
	}
	if got := runner.PID(namespace, pod.Name, "nope"); got != 0 {
		t.Errorf("PID of a container the pod does not have: %d", got)
	}
	if err := client.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return runner.PID(namespace, pod.Name, "c0") == 0, nil
	})
	if err != nil {
		t.Errorf("the deleted pod's container still has pid %d", runner.PID(namespace, pod.Name, "c0"))
	}
}
