package gang

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// YuniKorn's pod metadata (yunikorn-k8shim v1.9.0,
// pkg/common/constants/constants.go).
const (
	labelYKAppID         = "yunikorn.apache.org/app-id"
	labelYKQueue         = "yunikorn.apache.org/queue"
	annotationTaskGroups = "yunikorn.apache.org/task-groups"
	annotationTaskGroup  = "yunikorn.apache.org/task-group-name"
	annotationSchedPol   = "yunikorn.apache.org/schedulingPolicyParameters"
	annotationPlacehold  = "internal.yunikorn.apache.org/placeholder"
	groupDriver          = "spark-driver"
	groupExecutor        = "spark-executor"
)

// taskGroup is one entry of the task-groups annotation.
type taskGroup struct {
	Name        string              `json:"name"`
	MinMember   int32               `json:"minMember"`
	MinResource corev1.ResourceList `json:"minResource"`
}

func taskGroupsOf(pod *corev1.Pod) ([]taskGroup, error) {
	var groups []taskGroup
	if err := json.Unmarshal([]byte(pod.Annotations[annotationTaskGroups]), &groups); err != nil {
		return nil, fmt.Errorf("pod %s: annotation %s: %w", pod.Name, annotationTaskGroups, err)
	}
	return groups, nil
}

// appOf is the YuniKorn application a pod belongs to: label
// yunikorn.apache.org/app-id, else Spark's spark-app-selector, in the order
// YuniKorn reads them (pkg/common/utils/utils.go GetApplicationIDFromPod).
func appOf(pod *corev1.Pod) string {
	if id := pod.Labels[labelYKAppID]; id != "" {
		return id
	}
	return pod.Labels["spark-app-selector"]
}

func isPlaceholder(pod *corev1.Pod) bool { return pod.Annotations[annotationPlacehold] == "true" }

// holds reports whether a pod holds its node's resources: bound, not
// finished and not being deleted.
func holds(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// podRequests is a pod's effective requests: its containers and native
// sidecars, or its largest init container (with the sidecars started before
// it) if that is more, as the scheduler counts them.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	add := func(to corev1.ResourceList, l corev1.ResourceList) {
		for name, q := range l {
			v := to[name]
			v.Add(q)
			to[name] = v
		}
	}
	initMax := corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sum, c.Resources.Requests)
			continue
		}
		at := sum.DeepCopy()
		add(at, c.Resources.Requests)
		for name, q := range at {
			if v, ok := initMax[name]; !ok || q.Cmp(v) > 0 {
				initMax[name] = q
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		add(sum, c.Resources.Requests)
	}
	for name, q := range initMax {
		if q.Cmp(sum[name]) > 0 {
			sum[name] = q
		}
	}
	return sum
}

// gangWatch follows every pod of a namespace in the order the API server
// reports their changes, and records each driver's first binding together
// with how many pods of its executor group (YuniKorn's placeholders or the
// executors that replaced them) held a node at that moment.
type gangWatch struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	bound map[string]binding // by driver pod name
	// placeholders are the names of every placeholder seen, by application.
	placeholders map[string]map[string]bool
	stop         chan struct{}
}

// binding is what the watch saw when a driver was first bound to a node.
type binding struct {
	at       time.Time
	node     string
	holding  int32 // pods of the executor group holding a node
	minimum  int32 // the executor group's minMember
	problems []string
}

func watchGangs(t *testing.T, ns string) *gangWatch {
	t.Helper()
	w := &gangWatch{pods: map[string]*corev1.Pod{}, bound: map[string]binding{}, placeholders: map[string]map[string]bool{}, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
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
		t.Fatal(err)
	}
	factory.Start(w.stop)
	t.Cleanup(func() { close(w.stop) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	return w
}

func (w *gangWatch) observe(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[pod.Name] = pod
	if isPlaceholder(pod) {
		app := appOf(pod)
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
	b := binding{at: time.Now(), node: pod.Spec.NodeName}
	groups, err := taskGroupsOf(pod)
	if err != nil {
		b.problems = append(b.problems, err.Error())
	}
	for _, g := range groups {
		if g.Name == groupExecutor {
			b.minimum = g.MinMember
		}
	}
	app := appOf(pod)
	for _, p := range w.pods {
		if appOf(p) == app && p.Annotations[annotationTaskGroup] == groupExecutor && holds(p) {
			b.holding++
		}
	}
	if b.minimum == 0 {
		b.problems = append(b.problems, fmt.Sprintf("driver %s has no %s task group", pod.Name, groupExecutor))
	}
	w.bound[pod.Name] = b
}

// boundAt returns the driver's first binding, if it was bound.
func (w *gangWatch) boundAt(driver string) (binding, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.bound[driver]
	return b, ok
}

// placeholdersSeen counts the placeholders of an application seen so far,
// replaced ones included.
func (w *gangWatch) placeholdersSeen(app string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.placeholders[app])
}

// nodeUse sums the requests of the pods holding node.
func (w *gangWatch) nodeUse(node string) (cpu, memory resource.Quantity, pods []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		if p.Spec.NodeName != node || !holds(p) {
			continue
		}
		r := podRequests(p)
		cpu.Add(r[corev1.ResourceCPU])
		memory.Add(r[corev1.ResourceMemory])
		pods = append(pods, p.Name)
	}
	return cpu, memory, pods
}
