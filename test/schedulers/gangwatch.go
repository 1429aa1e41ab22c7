package schedulers

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	podresource "k8s.io/component-helpers/resource"
)

// YuniKorn's pod metadata (yunikorn-k8shim v1.9.0,
// pkg/common/constants/constants.go) and sparklet's task groups.
const (
	LabelAppID            = "yunikorn.apache.org/app-id"
	LabelQueue            = "yunikorn.apache.org/queue"
	AnnotationTaskGroups  = "yunikorn.apache.org/task-groups"
	AnnotationTaskGroup   = "yunikorn.apache.org/task-group-name"
	AnnotationPlaceholder = "internal.yunikorn.apache.org/placeholder"
	GroupDriver           = "spark-driver"
	GroupExecutor         = "spark-executor"
)

// TaskGroup is one entry of the task-groups annotation.
type TaskGroup struct {
	Name        string              `json:"name"`
	MinMember   int32               `json:"minMember"`
	MinResource corev1.ResourceList `json:"minResource"`
}

// TaskGroups decodes a pod's task-groups annotation.
func TaskGroups(pod *corev1.Pod) ([]TaskGroup, error) {
	var groups []TaskGroup
	if err := json.Unmarshal([]byte(pod.Annotations[AnnotationTaskGroups]), &groups); err != nil {
		return nil, fmt.Errorf("pod %s: annotation %s: %w", pod.Name, AnnotationTaskGroups, err)
	}
	return groups, nil
}

// AppOf is the YuniKorn application a pod belongs to, from the two of the
// keys YuniKorn reads that sparklet's pods carry, in YuniKorn's order
// (pkg/common/utils/utils.go GetApplicationIDFromPod): label
// yunikorn.apache.org/app-id, else Spark's spark-app-selector.
func AppOf(pod *corev1.Pod) string {
	if id := pod.Labels[LabelAppID]; id != "" {
		return id
	}
	return pod.Labels["spark-app-selector"]
}

// IsPlaceholder reports whether YuniKorn made the pod to hold a task
// group member's room.
func IsPlaceholder(pod *corev1.Pod) bool { return pod.Annotations[AnnotationPlaceholder] == "true" }

// Holds reports whether a pod holds its node's resources: bound, not
// finished and not being deleted.
func Holds(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// GangWatch follows every pod of a namespace in the order the API server
// reports their changes, and records each driver's first binding together
// with how many pods of its executor group (YuniKorn's placeholders or the
// executors that replaced them) held a node at that moment.
type GangWatch struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	bound map[string]Binding // by driver pod name
	// placeholders are the names of every placeholder seen, by application.
	placeholders map[string]map[string]bool
	stop         chan struct{}
}

// Binding is what the watch saw when a driver was first bound to a node.
type Binding struct {
	At       time.Time
	Node     string
	Holding  int32 // pods of the executor group holding a node
	Minimum  int32 // the executor group's minMember
	Problems []string
}

// WatchGangs starts a GangWatch on namespace ns and returns once it has
// listed the pods already there; Stop ends it.
func WatchGangs(ctx context.Context, client kubernetes.Interface, ns string) (*GangWatch, error) {
	w := &GangWatch{pods: map[string]*corev1.Pod{}, bound: map[string]Binding{}, placeholders: map[string]map[string]bool{}, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	// One handler: its notifications arrive one at a time, in order.
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { w.observe(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				w.mu.Lock()
				delete(w.pods, p.Name)
				w.mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.Stop()
		return nil, fmt.Errorf("pod informer of namespace %s did not sync", ns)
	}
	return w, nil
}

// Stop ends the watch.
func (w *GangWatch) Stop() { close(w.stop) }

func (w *GangWatch) observe(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[pod.Name] = pod
	if IsPlaceholder(pod) {
		app := AppOf(pod)
		if w.placeholders[app] == nil {
			w.placeholders[app] = map[string]bool{}
		}
		w.placeholders[app][pod.Name] = true
	}
	if pod.Labels["spark-role"] != "driver" || pod.Spec.NodeName == "" {
		return
	}
	if _, seen := w.bound[pod.Name]; seen {
		return
	}
	b := Binding{At: time.Now(), Node: pod.Spec.NodeName}
	groups, err := TaskGroups(pod)
	if err != nil {
		b.Problems = append(b.Problems, err.Error())
	}
	for _, g := range groups {
		if g.Name == GroupExecutor {
			b.Minimum = g.MinMember
		}
	}
	app := AppOf(pod)
	for _, p := range w.pods {
		if AppOf(p) == app && p.Annotations[AnnotationTaskGroup] == GroupExecutor && Holds(p) {
			b.Holding++
		}
	}
	if b.Minimum == 0 {
		b.Problems = append(b.Problems, fmt.Sprintf("driver %s has no %s task group", pod.Name, GroupExecutor))
	}
	w.bound[pod.Name] = b
}

// BoundAt returns the driver's first binding, if it was bound.
func (w *GangWatch) BoundAt(driver string) (Binding, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.bound[driver]
	return b, ok
}

// PlaceholdersSeen counts the placeholders of an application seen so far,
// replaced ones included.
func (w *GangWatch) PlaceholdersSeen(app string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.placeholders[app])
}

// PlaceholdersHolding counts the placeholders of an application holding a
// node now.
func (w *GangWatch) PlaceholdersHolding(app string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.pods {
		if IsPlaceholder(p) && AppOf(p) == app && Holds(p) {
			n++
		}
	}
	return n
}

// NodeUse sums the requests of the pods holding node.
func (w *GangWatch) NodeUse(node string) (cpu, memory resource.Quantity, pods []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		if p.Spec.NodeName != node || !Holds(p) {
			continue
		}
		r := podresource.PodRequests(p, podresource.PodResourcesOptions{})
		cpu.Add(r[corev1.ResourceCPU])
		memory.Add(r[corev1.ResourceMemory])
		pods = append(pods, p.Name)
	}
	return cpu, memory, pods
}
