package node

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/syncbuffer"
	"github.com/sparklet/sparklet/vocab"
)

// executorContainer is the container Spark names in its executor pods
// (Constants.DEFAULT_EXECUTOR_CONTAINER_NAME, resource-managers/kubernetes).
const executorContainer = "spark-kubernetes-executor"

// executorLog is one executor's log as `kubectl logs -f` streamed it.
type executorLog struct {
	pod, id string
	log     *syncbuffer.Buffer
}

// executorLogs follows, through the kubelet, the log of each executor of
// one application from the moment its container runs until it ends: the
// sidecar deletes executors as soon as the driver ends, so their logs are
// read while they run.
type executorLogs struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
	mu   sync.Mutex
	logs []executorLog
	errs []error
}

func followExecutors(ctx context.Context, ns, appID string) *executorLogs {
	ctx, stop := context.WithCancel(ctx)
	e := &executorLogs{stop: stop}
	followed := map[string]bool{}
	selector := "spark-role=executor," + vocab.LabelAppID + "=" + appID
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				if !followed[p.Name] && started(&p, executorContainer) {
					followed[p.Name] = true
					e.follow(ctx, ns, p.Name, p.Labels["spark-exec-id"])
				}
			}
			return false, nil
		})
	}()
	return e
}

// started tells whether the container has run: its log is there.
func started(p *corev1.Pod, container string) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Running != nil || s.State.Terminated != nil
		}
	}
	return false
}

func (e *executorLogs) follow(ctx context.Context, ns, pod, id string) {
	buf := &syncbuffer.Buffer{}
	e.mu.Lock()
	e.logs = append(e.logs, executorLog{pod: pod, id: id, log: buf})
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		stream, err := cp.Client().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: executorContainer, Follow: true}).Stream(ctx)
		if err == nil {
			_, err = io.Copy(buf, stream)
			stream.Close()
		}
		if err != nil && ctx.Err() == nil {
			e.mu.Lock()
			e.errs = append(e.errs, fmt.Errorf("kubectl logs -f %s: %w", pod, err))
			e.mu.Unlock()
		}
	}()
}

// done stops following and returns what was read; each stream has ended
// with its container, unless the executor is still running.
func (e *executorLogs) done(t *testing.T) []executorLog {
	t.Helper()
	e.stop()
	e.wg.Wait()
	for _, err := range e.errs {
		t.Error(err)
	}
	return e.logs
}

// waitExecutorsGone waits until no executor pod of the application is
// left, terminating ones included.
func waitExecutorsGone(ctx context.Context, t *testing.T, ns, appID string) {
	t.Helper()
	selector := "spark-role=executor," + vocab.LabelAppID + "=" + appID
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("executors of %s left a minute after the driver ended: %v", appID, left)
	}
}
