package sidecar

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// event is one change the informer saw, in the order it saw them. Its
// pod carries the JSON every watch sends, encoded once.
type event struct {
	Type watch.EventType
	Pod  *cachedPod
	rv   uint64
}

// hub fans the informer's events out to the JVM's watches and keeps the
// most recent ones, so a watch that resumes from a resourceVersion gets
// what it missed instead of a 410, which fabric8 would never recover from.
// It also keeps the last state of deleted pods (tombstones), so a watch
// resuming from before what the ring holds still learns of the deletions
// it missed: with API polling off, Spark has no other way to.
// The ring is bounded by the bytes of its pods' JSON as well as by count:
// each event holds a version of a pod, and executors are what the
// sidecar's memory grows with.
type hub struct {
	mu     sync.Mutex
	recent []event // ring, oldest first
	max    int     // events
	// maxBytes bounds the JSON the ring holds; bytes is what it holds.
	maxBytes, bytes int
	subs            map[chan event]struct{}
	latest          uint64
	// dropped is set once the ring has discarded events.
	dropped bool
	// tombs holds the newest deletions by pod name, bounded like the ring
	// (max events, maxBytes of JSON, tombBytes held); tombOrder is their
	// names, oldest first.
	tombs     map[string]event
	tombOrder []string
	tombBytes int
}

func newHub(max, maxBytes int) *hub {
	return &hub{max: max, maxBytes: maxBytes, subs: map[chan event]struct{}{}, tombs: map[string]event{}}
}

func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// handler feeds the hub from an informer.
func (h *hub) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.publish(watch.Added, obj) },
		UpdateFunc: func(_, obj any) { h.publish(watch.Modified, obj) },
		DeleteFunc: func(obj any) { h.publish(watch.Deleted, obj) },
	}
}

func (h *hub) publish(t watch.EventType, obj any) {
	pod, ok := cachedOf(obj)
	if !ok {
		return
	}
	e := event{Type: t, Pod: pod, rv: pod.rv()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.rv > h.latest {
		h.latest = e.rv
	}
	h.remember(e)
	h.recent = append(h.recent, e)
	h.bytes += len(pod.json)
	drop := 0
	for len(h.recent)-drop > 1 && (len(h.recent)-drop > h.max || h.bytes > h.maxBytes) {
		h.bytes -= len(h.recent[drop].Pod.json)
		drop++
	}
	if drop > 0 {
		clear(h.recent[:drop]) // so the dropped pods can be collected
		h.recent = h.recent[drop:]
		h.dropped = true
	}
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
			// A watcher too slow to keep up is closed; its client reconnects
			// with its last resourceVersion and is replayed from recent.
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// remember keeps a deletion as a tombstone and forgets the tombstone of a
// name that comes back. Called with mu held.
func (h *hub) remember(e event) {
	name := e.Pod.Name
	switch e.Type {
	case watch.Deleted:
		if old, ok := h.tombs[name]; ok {
			h.tombBytes -= len(old.Pod.json)
		} else {
			h.tombOrder = append(h.tombOrder, name)
		}
		h.tombs[name] = e
		h.tombBytes += len(e.Pod.json)
		for len(h.tombOrder) > 1 && (len(h.tombOrder) > h.max || h.tombBytes > h.maxBytes) {
			h.tombBytes -= len(h.tombs[h.tombOrder[0]].Pod.json)
			delete(h.tombs, h.tombOrder[0])
			h.tombOrder = h.tombOrder[1:]
		}
	case watch.Added:
		if old, ok := h.tombs[name]; ok {
			h.tombBytes -= len(old.Pod.json)
			delete(h.tombs, name)
			h.tombOrder = slices.DeleteFunc(h.tombOrder, func(n string) bool { return n == name })
		}
	}
}

// subscribe returns a channel of new events and, when since is a version
// the hub still holds, the events after it (replay=true). Otherwise the
// caller starts from the current state, after the deletions since then
// (missed holds their tombstones, oldest first).
func (h *hub) subscribe(since uint64) (ch chan event, missed []event, replay bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch = make(chan event, 1024)
	h.subs[ch] = struct{}{}
	if since == 0 {
		return ch, nil, false
	}
	if h.latest == 0 {
		return ch, nil, false // no versions seen yet: start from the current state
	}
	if since >= h.latest {
		return ch, nil, true
	}
	if h.dropped && (len(h.recent) == 0 || h.recent[0].rv > since) {
		// Older than what we keep: the deletions since, then the current state.
		for _, name := range h.tombOrder {
			if e := h.tombs[name]; e.rv > since {
				missed = append(missed, e)
			}
		}
		slices.SortFunc(missed, func(a, b event) int { return cmp.Compare(a.rv, b.rv) })
		return ch, missed, false
	}
	for _, e := range h.recent {
		if e.rv > since {
			missed = append(missed, e)
		}
	}
	return ch, missed, true
}

func (h *hub) unsubscribe(ch chan event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

func (h *hub) latestRV() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}
