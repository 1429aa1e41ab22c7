package sidecar

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/vocab"
)

// keeper keeps the failed executor pods the JVM deletes for the policy's
// logs.keepFailedExecutorsSeconds, so that `kubectl logs` works on them:
// it labels each vocab.LabelKeptUntil, answers the JVM as if deleted, and
// deletes it when the window ends. Spark deletes an executor pod that
// reached a final state (ExecutorPodsLifecycleManager, 3.5.9 to 4.3.0) and
// calls again on each snapshot while it still sees it; those calls are
// answered from here. The end-of-application cleanup leaves the kept
// pods; the webhook (--reap-kept-executors) deletes those whose window
// ends after the sidecar has exited.
type keeper struct {
	client    kubecore.Interface
	namespace string
	window    time.Duration
	log       *logrus.Entry

	mu   sync.Mutex
	kept map[string]bool
}

func newKeeper(client kubecore.Interface, namespace string, seconds int64, log *logrus.Entry) *keeper {
	return &keeper{client: client, namespace: namespace, window: time.Duration(seconds) * time.Second, log: log, kept: map[string]bool{}}
}

// keep tells whether pod is kept rather than deleted now: a failed
// executor (its failure, as executorEnds read it), with a window in the
// policy.
func (k *keeper) keep(pod *cachedPod) bool {
	if k == nil || k.window <= 0 || pod.failure == nil {
		return false
	}
	k.mu.Lock()
	if k.kept[pod.Name] {
		k.mu.Unlock()
		return true
	}
	k.kept[pod.Name] = true
	k.mu.Unlock()
	// The label holds whole seconds; the window never ends before it says.
	until := time.Now().Add(k.window + time.Second - 1).Truncate(time.Second)
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{%q:%q}}}`, pod.UID, vocab.LabelKeptUntil, strconv.FormatInt(until.Unix(), 10))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := k.client.Pods(k.namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		k.log.WithError(err).WithField("pod", pod.Name).Warn("could not label a failed executor to keep it; deleting it now")
		k.mu.Lock()
		delete(k.kept, pod.Name)
		k.mu.Unlock()
		return false
	}
	k.log.WithFields(logrus.Fields{"pod": pod.Name, "until": until.UTC().Format(time.RFC3339)}).Info("keeping a failed executor for its logs")
	time.AfterFunc(time.Until(until), func() { k.delete(pod.Name, pod.UID) })
	return true
}

// delete deletes a kept pod once its window has ended.
func (k *keeper) delete(name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := k.client.Pods(k.namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		k.log.WithError(err).WithField("pod", name).Warn("could not delete a kept failed executor; the webhook's reaper, or its owner the driver pod, takes it along")
	}
}
