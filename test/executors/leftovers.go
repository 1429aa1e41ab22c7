package executors

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/vocab"
)

// Leftovers counts what the application left: executor pods, executor
// ConfigMaps and PVCs labelled with its app id.
func Leftovers(ctx context.Context, client kubernetes.Interface, ns, appID string) (pods, configMaps, pvcs int, err error) {
	sel := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID + "," + vocab.LabelRole + "!=driver"}
	pl, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		return 0, 0, 0, err
	}
	cl, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID})
	if err != nil {
		return 0, 0, 0, err
	}
	vl, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID})
	if err != nil {
		return 0, 0, 0, err
	}
	return len(pl.Items), len(cl.Items), len(vl.Items), nil
}

// WaitClean waits until nothing of the application is left and returns
// when that was first seen; it fails t after timeout, with what the last
// answered poll counted and the last error, if any.
func WaitClean(t testing.TB, client kubernetes.Interface, ns, appID string, timeout time.Duration) time.Time {
	t.Helper()
	var p, c, v int
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, cms, pvcs, err := Leftovers(ctx, client, ns, appID)
		if err != nil {
			lastErr = err
			return false, nil
		}
		p, c, v = pods, cms, pvcs
		return p+c+v == 0, nil
	})
	if err != nil {
		t.Fatalf("application %s left %d executor pods, %d ConfigMaps, %d PVCs after %v (last error: %v)", appID, p, c, v, timeout, lastErr)
	}
	return time.Now()
}
