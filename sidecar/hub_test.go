package sidecar

import (
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// podAt is a pod version as the informer's transform hands it to the hub.
func podAt(name string, rv int) any {
	c, err := podTransform(false)(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(rv)}})
	if err != nil {
		panic(err)
	}
	return c
}

func names(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type)+" "+e.Pod.Name+"@"+e.Pod.ResourceVersion)
	}
	return out
}

// A watch resuming from before what the ring holds gets the deletions it
// missed, oldest first, and then the current state (replay false).
func TestHubResumeOlderThanRingSendsTombstones(t *testing.T) {
	h := newHub(2, 1<<20)
	h.publish(watch.Added, podAt("exec-1", 1))
	h.publish(watch.Added, podAt("exec-2", 2))
	h.publish(watch.Deleted, podAt("exec-2", 3))
	h.publish(watch.Deleted, podAt("exec-1", 4))
	h.publish(watch.Added, podAt("exec-3", 5))
	h.publish(watch.Modified, podAt("exec-3", 6))

	_, missed, replay := h.subscribe(2)
	if replay {
		t.Fatal("resume from 2 replayed, but the ring starts at 5")
	}
	if got, want := names(missed), []string{"DELETED exec-2@3", "DELETED exec-1@4"}; !slices.Equal(got, want) {
		t.Errorf("missed = %v, want %v", got, want)
	}
	_, missed, _ = h.subscribe(3)
	if got, want := names(missed), []string{"DELETED exec-1@4"}; !slices.Equal(got, want) {
		t.Errorf("from 3: missed = %v, want %v", got, want)
	}
	_, missed, replay = h.subscribe(5)
	if !replay {
		t.Fatal("resume from 5 did not replay from the ring")
	}
	if got, want := names(missed), []string{"MODIFIED exec-3@6"}; !slices.Equal(got, want) {
		t.Errorf("from 5: missed = %v, want %v", got, want)
	}
}

// A name that comes back loses its tombstone, and the hub keeps at most
// max tombstones, dropping the oldest.
func TestHubTombstonesAreBounded(t *testing.T) {
	h := newHub(2, 1<<20)
	h.publish(watch.Deleted, podAt("a", 1))
	h.publish(watch.Added, podAt("a", 2))
	h.publish(watch.Deleted, podAt("b", 3))
	h.publish(watch.Deleted, podAt("c", 4))
	h.publish(watch.Deleted, podAt("d", 5))
	h.publish(watch.Added, podAt("e", 6))
	h.publish(watch.Added, podAt("f", 7))
	_, missed, replay := h.subscribe(1)
	if replay {
		t.Fatal("replayed from a dropped version")
	}
	if got, want := names(missed), []string{"DELETED c@4", "DELETED d@5"}; !slices.Equal(got, want) {
		t.Errorf("missed = %v, want %v", got, want)
	}
}

// Tombstones are bounded by the bytes of their JSON as the ring is.
func TestHubTombstonesAreBoundedByBytes(t *testing.T) {
	one := len(podAt("a", 1).(*cachedPod).json)
	h := newHub(100, 2*one)
	for i, name := range []string{"a", "b", "c", "d"} {
		h.publish(watch.Deleted, podAt(name, i+1))
	}
	if len(h.tombOrder) != 2 || h.tombBytes > 2*one {
		t.Errorf("%d tombstones in %d bytes, want 2 in at most %d", len(h.tombOrder), h.tombBytes, 2*one)
	}
}
