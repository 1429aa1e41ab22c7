package sidecar

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// hubSize is how many recent events a watch can resume from, and
// hubBytes how much of their pods' JSON a hub keeps: about 250 executor
// events, two seconds of a 1000-executor allocation's events, where a
// reconnecting watch is back within one. A watch resuming from further
// back gets the current state.
const (
	hubSize  = 8192
	hubBytes = 1 << 20
)

// startInformers starts one informer on this application's executors and
// one on the driver pod, each scoped to the namespace and by selector, and
// waits for both caches to sync. The returned channel is closed when the
// Spark container ends. The informers run until stop is closed.
func (s *Sidecar) startInformers(ctx context.Context, stop <-chan struct{}, pol *policy.Effective) (*state, <-chan struct{}, error) {
	execPods := s.podInformer(func(o *metav1.ListOptions) {
		o.LabelSelector = s.apps.all().String() + "," + vocab.LabelRole + "=executor"
	})
	driverPods := s.podInformer(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.cfg.PodName).String()
	})
	// Both caches keep each pod's JSON and the fields the sidecar reads;
	// the driver's also the whole pod, whose container statuses and
	// annotations the sidecar watches.
	if err := execPods.SetTransform(podTransform(false)); err != nil {
		return nil, nil, err
	}
	if err := driverPods.SetTransform(podTransform(true)); err != nil {
		return nil, nil, err
	}
	st := &state{
		driverName: s.cfg.PodName,
		executors: &source{store: execPods.GetIndexer(), namespace: s.cfg.Namespace, hub: newHub(hubSize, hubBytes),
			keep: func(p *cachedPod) bool {
				return s.apps.owns(p.Labels) && p.Labels[vocab.LabelRole] == "executor"
			}},
		driverSource: &source{store: driverPods.GetIndexer(), namespace: s.cfg.Namespace, hub: newHub(256, hubBytes),
			keep: func(p *cachedPod) bool { return p.Name == s.cfg.PodName }},
		ends: newExecutorEnds(s.events, time.Duration(pol.Sidecar.ExecutorScheduleDeadlineSeconds)*time.Second),
	}
	for _, h := range []cache.ResourceEventHandler{st.executors.hub.handler(), st.ends.handler()} {
		if _, err := execPods.AddEventHandler(h); err != nil {
			return nil, nil, err
		}
	}
	if _, err := driverPods.AddEventHandler(st.driverSource.hub.handler()); err != nil {
		return nil, nil, err
	}
	onEnd, ended := s.sparkEndedHandler()
	for _, h := range []cache.ResourceEventHandler{onEnd, s.annotationsChangedHandler(s.driver.Pod)} {
		if _, err := driverPods.AddEventHandler(h); err != nil {
			return nil, nil, err
		}
	}
	go execPods.Run(stop)
	go driverPods.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), execPods.HasSynced) {
		return nil, nil, errors.New("executor informer did not sync")
	}
	if !cache.WaitForCacheSync(ctx.Done(), driverPods.HasSynced) {
		return nil, nil, errors.New("driver informer did not sync")
	}
	return st, ended, nil
}

// podInformer is an informer on the pods of the sidecar's namespace that
// tweak selects, built as client-go's informer factory builds its pod
// informer (informers/core/v1/pod.go, v0.36) but on the sidecar's own
// client.
func (s *Sidecar) podInformer(tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	pods := s.client.Pods(s.cfg.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return pods.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.client), &corev1.Pod{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
}
