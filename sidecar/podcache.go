package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// cachedPod is what an informer keeps of one pod version: the pod as the
// JVM is served it, encoded once, and the fields the sidecar itself reads.
// GET, LIST and every watch send json as it is, so serving a pod never
// decodes or encodes it again, and each watch event is encoded once for
// all its subscribers.
type cachedPod struct {
	podFacts
	// pod is the whole decoded pod, kept for the driver only: the
	// sidecar reads its container statuses and annotations.
	pod *corev1.Pod
	// failure is how an executor failed, once it has, and unschedulable
	// why the scheduler has not placed it yet (executorEnds).
	failure       *executorFailure
	unschedulable string
	// json is the pod with its kind, as the API server sends it, less
	// metadata.managedFields (see encodeForJVM).
	json []byte
}

// podFacts are the fields of a pod the sidecar reads itself: the name,
// namespace, UID, resourceVersion, labels and deletionTimestamp, and the
// fields a field selector can name. A quarter of a corev1.Pod's size.
type podFacts struct {
	metav1.ObjectMeta
	Phase         corev1.PodPhase
	NodeName      string
	RestartPolicy corev1.RestartPolicy
}

// rv is the pod's resourceVersion as a number.
func (c *cachedPod) rv() uint64 { return parseRV(c.ResourceVersion) }

// decode returns the whole pod, decoded afresh from what the JVM is
// served; the caller owns it.
func (c *cachedPod) decode() (*corev1.Pod, error) {
	var p corev1.Pod
	if err := json.Unmarshal(c.json, &p); err != nil {
		return nil, fmt.Errorf("decode cached pod %s: %w", c.Name, err)
	}
	return &p, nil
}

// podTransform returns the informer transform that turns each pod the
// informer receives into a cachedPod, keeping the whole decoded pod when
// driver is set. It is idempotent, as client-go asks of a transform.
func podTransform(driver bool) cache.TransformFunc {
	in := &interner{}
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil // a cachedPod already, or a tombstone
		}
		raw, err := encodeForJVM(pod)
		if err != nil {
			return nil, err
		}
		c := &cachedPod{podFacts: factsOf(pod, in), json: raw}
		if driver {
			c.pod = pod
		} else {
			c.failure, c.unschedulable = failureOf(pod), unschedulableOf(pod)
		}
		return c, nil
	}
}

// encodeForJVM encodes a pod as the API server sends it, in place: kind
// and apiVersion set, metadata.managedFields dropped. managedFields are
// server-side apply's bookkeeping, about a third of an executor's bytes
// once the scheduler and the node have written its status. No client of
// the localhost API reads them: Spark's Kubernetes backend
// (ExecutorPodsSnapshot, ExecutorPodsAllocator,
// ExecutorPodsLifecycleManager in Spark 3.5 and 4.x) reads labels,
// deletionTimestamp, spec and status through fabric8's Pod model, never
// managedFields; the sidecar accepts no apply patch (checkMetadataPatch);
// kubectl hides them unless asked (--show-managed-fields).
func encodeForJVM(pod *corev1.Pod) ([]byte, error) {
	pod.ManagedFields = nil
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod %s: %w", pod.Name, err)
	}
	return raw, nil
}

func factsOf(p *corev1.Pod, in *interner) podFacts {
	return podFacts{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: in.get(p.Namespace), UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: in.labels(p.Labels), DeletionTimestamp: p.DeletionTimestamp},
		Phase: corev1.PodPhase(in.get(string(p.Status.Phase))), NodeName: in.get(p.Spec.NodeName),
		RestartPolicy: corev1.RestartPolicy(in.get(string(p.Spec.RestartPolicy))),
	}
}

// interner shares equal strings among an informer's cached pods: an
// application's executors differ in a label or two. It holds at most
// internMax strings, so values that are new with every executor (its id)
// cannot grow it for ever.
type interner struct {
	mu      sync.Mutex
	strings map[string]string
}

const internMax = 1024

func (in *interner) get(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.strings[s]; ok {
		return v
	}
	if in.strings == nil {
		in.strings = map[string]string{}
	}
	if len(in.strings) < internMax {
		in.strings[s] = s
	}
	return s
}

// labels copies labels with interned keys and values.
func (in *interner) labels(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[in.get(k)] = in.get(v)
	}
	return out
}

// cachedOf returns the cachedPod an informer handed out, unwrapping a
// tombstone; ok is false for anything else.
func cachedOf(obj any) (*cachedPod, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	c, ok := obj.(*cachedPod)
	return c, ok && c != nil
}

// writePod answers with one cached pod.
func writePod(w http.ResponseWriter, code int, p *cachedPod) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(p.json)
	_, _ = w.Write([]byte{'\n'})
}

// writePodList answers with a PodList of cached pods, written as it goes
// rather than built in memory first.
func writePodList(w http.ResponseWriter, items []*cachedPod, resourceVersion string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	// Items is never null: the API server sends [], and fabric8 hands
	// Spark a null list otherwise.
	rv, _ := json.Marshal(resourceVersion)
	_, _ = bw.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":`)
	_, _ = bw.Write(rv)
	_, _ = bw.WriteString(`},"items":[`)
	for i, p := range items {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(p.json)
	}
	_, _ = bw.WriteString("]}\n")
	_ = bw.Flush()
}
