package sidecar

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"

	"github.com/sparklet/sparklet/patches"
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
func (s *Sidecar) startInformers(ctx context.Context, stop <-chan struct{}) (*state, <-chan struct{}, error) {
	execFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = patches.LabelAppID + "=" + s.appID + "," + patches.LabelRole + "=executor"
		}))
	driverFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.cfg.PodName).String()
		}))
	execPods := execFactory.Core().V1().Pods()
	driverPods := driverFactory.Core().V1().Pods()
	// Both caches keep each pod's JSON and the fields the sidecar reads;
	// the driver's also the whole pod, which the executor patches read.
	if err := execPods.Informer().SetTransform(podTransform(false)); err != nil {
		return nil, nil, err
	}
	if err := driverPods.Informer().SetTransform(podTransform(true)); err != nil {
		return nil, nil, err
	}
	st := &state{
		driverName: s.cfg.PodName,
		executors: &source{store: execPods.Informer().GetIndexer(), namespace: s.cfg.Namespace, hub: newHub(hubSize, hubBytes),
			keep: func(p *cachedPod) bool {
				return p.Labels[patches.LabelAppID] == s.appID && p.Labels[patches.LabelRole] == "executor"
			}},
		driverSource: &source{store: driverPods.Informer().GetIndexer(), namespace: s.cfg.Namespace, hub: newHub(256, hubBytes),
			keep: func(p *cachedPod) bool { return p.Name == s.cfg.PodName }},
	}
	if _, err := execPods.Informer().AddEventHandler(st.executors.hub.handler()); err != nil {
		return nil, nil, err
	}
	if _, err := driverPods.Informer().AddEventHandler(st.driverSource.hub.handler()); err != nil {
		return nil, nil, err
	}
	onEnd, ended := s.sparkEndedHandler()
	if _, err := driverPods.Informer().AddEventHandler(onEnd); err != nil {
		return nil, nil, err
	}
	execFactory.Start(stop)
	driverFactory.Start(stop)
	for typ, ok := range execFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("executor informer %v did not sync", typ)
		}
	}
	for typ, ok := range driverFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("driver informer %v did not sync", typ)
		}
	}
	return st, ended, nil
}
