package sidecar

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// source is one informer's cache of cachedPods plus the hub of its
// events. keep restates the informer's selector, so what is served never
// depends on the server having filtered.
type source struct {
	store     cache.Indexer
	namespace string
	hub       *hub
	keep      func(*cachedPod) bool
}

// all returns every cached pod, kept or not.
func (s *source) all() []*cachedPod {
	objs, _ := s.store.ByIndex(cache.NamespaceIndex, s.namespace) // the informer's namespace index always exists
	out := make([]*cachedPod, 0, len(objs))
	for _, o := range objs {
		if c, ok := cachedOf(o); ok {
			out = append(out, c)
		}
	}
	return out
}

// get returns a cached pod that the source keeps.
func (s *source) get(name string) (*cachedPod, bool) {
	obj, exists, err := s.store.GetByKey(s.namespace + "/" + name)
	if err != nil || !exists {
		return nil, false
	}
	c, ok := cachedOf(obj)
	if !ok || !s.keep(c) {
		return nil, false
	}
	return c, true
}

// list returns the cached pods that match, sorted by name, and the latest
// resourceVersion the informer has seen, as a PodList carries them.
func (s *source) list(sel selectors) ([]*cachedPod, string) {
	var out []*cachedPod
	for _, p := range s.all() {
		if s.keep(p) && sel.matches(p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	rv := strconv.FormatUint(s.hub.latestRV(), 10)
	if rv == "0" {
		rv = "1"
	}
	return out, rv
}

// state is what the sidecar knows, all from informers.
type state struct {
	driverName   string
	executors    *source // this application's executor pods
	driverSource *source // the driver pod itself
	ends         *executorEnds
}

func (s *state) executor(name string) (*cachedPod, error) {
	if p, ok := s.executors.get(name); ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(podsGR, name)
}

// pod returns the driver pod or one of this application's executors.
func (s *state) pod(name string) (*cachedPod, error) {
	if name == s.driverName {
		if p, ok := s.driverSource.get(name); ok {
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
		if s.executors.keep(p) && p.DeletionTimestamp == nil && p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}
