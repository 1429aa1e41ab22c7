package sidecar

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// source is one informer's cache plus the hub of its events. keep
// restates the informer's selector, so what is served never depends on
// the server having filtered.
type source struct {
	store cache.Store
	hub   *hub
	keep  func(*corev1.Pod) bool
}

// list returns the cached pods that match, as a PodList at the latest
// resourceVersion the informer has seen.
func (s *source) list(sel selectors) *corev1.PodList {
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	for _, obj := range s.store.List() {
		p := obj.(*corev1.Pod)
		if s.keep(p) && sel.matches(p) {
			out.Items = append(out.Items, *p.DeepCopy())
		}
	}
	sortPods(out.Items)
	out.ResourceVersion = strconv.FormatUint(s.hub.latestRV(), 10)
	if out.ResourceVersion == "0" {
		out.ResourceVersion = "1"
	}
	return out
}

// state is what the sidecar knows, all from informers.
type state struct {
	namespace    string
	driverName   string
	executors    *source // this application's executor pods
	driverSource *source // the driver pod itself
}

func (s *state) driverPod() (*corev1.Pod, bool) {
	obj, ok, _ := s.driverSource.store.GetByKey(s.namespace + "/" + s.driverName)
	if !ok {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

func (s *state) executor(name string) (*corev1.Pod, error) {
	obj, ok, _ := s.executors.store.GetByKey(s.namespace + "/" + name)
	if !ok || !s.executors.keep(obj.(*corev1.Pod)) {
		return nil, apierrors.NewNotFound(podsGR, name)
	}
	return obj.(*corev1.Pod), nil
}

// pod returns the driver pod or one of this application's executors.
func (s *state) pod(name string) (*corev1.Pod, error) {
	if name == s.driverName {
		if p, ok := s.driverPod(); ok {
			return p, nil
		}
		return nil, apierrors.NewNotFound(podsGR, name)
	}
	return s.executor(name)
}

// activeExecutors counts executors that are not finished or deleted.
func (s *state) activeExecutors() int {
	n := 0
	for _, obj := range s.executors.store.List() {
		p := obj.(*corev1.Pod)
		if s.executors.keep(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

func (s *state) String() string {
	return fmt.Sprintf("%d executors cached", len(s.executors.store.List()))
}
