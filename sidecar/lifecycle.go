package sidecar

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/vocab"
)

// sparkEndedHandler returns an event handler for the driver pod's informer
// and a channel it closes once the Spark container has ended. When every
// JVM is an application of its own, the container restarts instead, and
// the handler cleans up after each JVM that ends; ended stays open.
func (s *Sidecar) sparkEndedHandler() (cache.ResourceEventHandler, <-chan struct{}) {
	ended := make(chan struct{})
	var once sync.Once
	check := func(obj any) {
		pod, ok := cachedOf(obj)
		switch {
		case !ok || pod.pod == nil:
		case s.apps.perJVM:
			// jvmEnded skips what it handled; it may wait for an adoption.
			if t := lastTermination(pod.pod, s.cfg.SparkContainer); !t.IsZero() {
				go s.apps.jvmEnded(t)
			}
		case sparkTermination(pod.pod, s.cfg.SparkContainer) != nil:
			once.Do(func() { close(ended) })
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}, ended
}

// cleanup deletes the executor pods, executor ConfigMaps and PVCs that sel
// selects (apps.all, apps.others): what Spark's own stop() would delete had
// the JVM stopped cleanly. Failed executors kept for their logs (keeper)
// stay until their window ends; the webhook's reaper deletes them then.
func cleanup(ctx context.Context, client kubecore.Interface, namespace string, sel labels.Selector) error {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	app := sel.String()

	steps := []struct {
		what string
		run  func() error
	}{
		{"executor pods", func() error {
			return client.Pods(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: app + "," + vocab.LabelRole + "=executor,!" + vocab.LabelKeptUntil})
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
			return fmt.Errorf("delete %s (%s): %w", s.what, app, err)
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
	err := cleanup(ctx, s.client, s.cfg.Namespace, s.apps.all())
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
