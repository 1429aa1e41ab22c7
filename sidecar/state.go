package sidecar

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// source is one informer's cache, read through its lister, plus the hub of
// its events. keep restates the informer's selector, so what is served
// never depends on the server having filtered.
type source struct {
	pods corelisters.PodNamespaceLister
	hub  *hub
	keep func(*corev1.Pod) bool
}

// all returns every cached pod, kept or not.
func (s *source) all() []*corev1.Pod {
	pods, _ := s.pods.List(labels.Everything()) // a cache List never fails
	return pods
}

// get returns a cached pod that the source keeps.
func (s *source) get(name string) (*corev1.Pod, bool) {
	p, err := s.pods.Get(name)
	if err != nil || !s.keep(p) {
		return nil, false
	}
	return p, true
}

// list returns copies of the cached pods that match, sorted by name, as a
// PodList at the latest resourceVersion the informer has seen.
func (s *source) list(sel selectors) *corev1.PodList {
	// Items is never null: the API server sends [], and fabric8 hands
	// Spark a null list otherwise.
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{}}
	for _, p := range s.all() {
		if s.keep(p) && sel.matches(p) {
			out.Items = append(out.Items, *p.DeepCopy())
		}
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].Name < out.Items[j].Name })
	out.ResourceVersion = strconv.FormatUint(s.hub.latestRV(), 10)
	if out.ResourceVersion == "0" {
		out.ResourceVersion = "1"
	}
	return out
}

// state is what the sidecar knows, all from informers.
type state struct {
	driverName   string
	executors    *source // this application's executor pods
	driverSource *source // the driver pod itself
}

func (s *state) driverPod() (*corev1.Pod, bool) {
	return s.driverSource.get(s.driverName)
}

func (s *state) executor(name string) (*corev1.Pod, error) {
	if p, ok := s.executors.get(name); ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(podsGR, name)
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
	for _, p := range s.executors.all() {
		if s.executors.keep(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}
