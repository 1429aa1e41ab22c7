package sidecar

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/vocab"
)

// sparkEndedHandler returns an event handler for the driver pod's informer
// and a channel it closes once the Spark container has ended.
func (s *Sidecar) sparkEndedHandler() (cache.ResourceEventHandler, <-chan struct{}) {
	ended := make(chan struct{})
	var once sync.Once
	check := func(obj any) {
		if pod, ok := cachedOf(obj); ok && pod.pod != nil && sparkTermination(pod.pod, s.cfg.SparkContainer) != nil {
			once.Do(func() { close(ended) })
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}, ended
}

// cleanup deletes the application's executor pods, executor ConfigMaps and
// PVCs: what Spark's own stop() would delete had the JVM stopped cleanly.
func cleanup(ctx context.Context, client kubecore.Interface, namespace, appID string) error {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	app := vocab.LabelAppID + "=" + appID

	steps := []struct {
		what string
		run  func() error
	}{
		{"executor pods", func() error {
			return client.Pods(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: app + "," + vocab.LabelRole + "=executor"})
		}},
		{"executor ConfigMaps", func() error {
			return client.ConfigMaps(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: app})
		}},
		{"PVCs", func() error {
			return client.PersistentVolumeClaims(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: app})
		}},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("delete %s of %s: %w", s.what, appID, err)
		}
	}
	return nil
}

// cleanupAndReport runs cleanup within timeout and records the outcome.
func (s *Sidecar) cleanupAndReport(why string) error {
	if s.api != nil && s.api.alloc != nil {
		s.api.alloc.reportUnreported()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CleanupTimeout)
	defer cancel()
	start := time.Now()
	err := cleanup(ctx, s.client, s.cfg.Namespace, s.appID)
	if err != nil {
		s.events.warning("CleanupFailed", err.Error())
		s.log.WithError(err).Error("cleanup failed")
		s.events.flush(5 * time.Second)
		return err
	}
	msg := fmt.Sprintf("%s: deleted the executors, executor ConfigMaps and PVCs of %s in %s", why, s.appID, time.Since(start).Round(time.Millisecond))
	s.events.normal("CleanedUp", msg)
	s.log.Info(msg)
	s.events.flush(5 * time.Second)
	return nil
}
