package schedulers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kueue's pod-facing names (pkg/controller/constants and
// pkg/controller/jobs/pod/constants, v0.19.2).
const (
	KueueQueueLabel   = "kueue.x-k8s.io/queue-name"
	KueueManagedLabel = "kueue.x-k8s.io/managed"
	KueueGate         = "kueue.x-k8s.io/admission"
	// KueueFinalizer is what Kueue's webhook puts on a pod it takes.
	KueueFinalizer = "kueue.x-k8s.io/managed"
)

func kueueResource(name string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: KueueVersion, Resource: name}
}

// KueueGated reports whether pod still waits for Kueue's admission.
func KueueGated(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == KueueGate {
			return true
		}
	}
	return false
}

// CreateClusterQueue creates a ClusterQueue for every namespace, with one
// ResourceFlavor (created if missing) and a nominal quota of quota (cpu
// and memory), StrictFIFO so that a waiting workload is not overtaken.
func (k *Kueue) CreateClusterQueue(ctx context.Context, name string, quota corev1.ResourceList) error {
	flavor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/" + KueueVersion, "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "default-flavor"},
	}}
	if _, err := k.dyn.Resource(kueueResource("resourceflavors")).Create(ctx, flavor, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ResourceFlavor: %w", err)
	}
	var resources []any
	var covered []any
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := quota[r]
		if !ok {
			return fmt.Errorf("ClusterQueue %s: quota needs %s", name, r)
		}
		covered = append(covered, string(r))
		resources = append(resources, map[string]any{"name": string(r), "nominalQuota": q.String()})
	}
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/" + KueueVersion, "kind": "ClusterQueue",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{},
			"queueingStrategy":  "StrictFIFO",
			"resourceGroups": []any{map[string]any{
				"coveredResources": covered,
				"flavors":          []any{map[string]any{"name": "default-flavor", "resources": resources}},
			}},
		},
	}}
	if _, err := k.dyn.Resource(kueueResource("clusterqueues")).Create(ctx, cq, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterQueue %s: %w", name, err)
	}
	return nil
}

// CreateLocalQueue creates LocalQueue name in namespace ns, pointing at
// ClusterQueue cq.
func (k *Kueue) CreateLocalQueue(ctx context.Context, ns, name, cq string) error {
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/" + KueueVersion, "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"clusterQueue": cq},
	}}
	if _, err := k.dyn.Resource(kueueResource("localqueues")).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create LocalQueue %s/%s: %w", ns, name, err)
	}
	return nil
}

// KueueWorkload is what the tests read of a Workload.
type KueueWorkload struct {
	Name string
	// Pod is the name of the pod that owns it.
	Pod string
	// Queue is spec.queueName, the LocalQueue.
	Queue string
	// ClusterQueue is where it holds quota; empty until admitted.
	ClusterQueue string
	// Admitted is its Admitted condition.
	Admitted bool
	// Usage is the quota it holds, summed over its pod sets.
	Usage corev1.ResourceList
}

// Workloads lists the Workloads in namespace ns.
func (k *Kueue) Workloads(ctx context.Context, ns string) ([]KueueWorkload, error) {
	list, err := k.dyn.Resource(kueueResource("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Workloads in %s: %w", ns, err)
	}
	var out []KueueWorkload
	for i := range list.Items {
		w, err := kueueWorkloadOf(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// kueueWorkloadOf reads a Workload.
func kueueWorkloadOf(item *unstructured.Unstructured) (KueueWorkload, error) {
	w := KueueWorkload{Name: item.GetName(), Usage: corev1.ResourceList{}}
	for _, o := range item.GetOwnerReferences() {
		if o.Kind == "Pod" {
			w.Pod = o.Name
		}
	}
	w.Queue, _, _ = unstructured.NestedString(item.Object, "spec", "queueName")
	w.ClusterQueue, _, _ = unstructured.NestedString(item.Object, "status", "admission", "clusterQueue")
	conds, _, _ := unstructured.NestedSlice(item.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Admitted" && m["status"] == "True" {
			w.Admitted = true
		}
	}
	sets, _, _ := unstructured.NestedSlice(item.Object, "status", "admission", "podSetAssignments")
	for _, s := range sets {
		m, _ := s.(map[string]any)
		usage, _, _ := unstructured.NestedStringMap(m, "resourceUsage")
		if err := addKueueQuantities(w.Usage, usage); err != nil {
			return w, fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	return w, nil
}

// ClusterQueueUsage is what ClusterQueue name's status counts as used
// (status.flavorsUsage, summed over flavors) and how many workloads it has
// admitted and has pending.
func (k *Kueue) ClusterQueueUsage(ctx context.Context, name string) (used corev1.ResourceList, admitted, pending int64, err error) {
	cq, err := k.dyn.Resource(kueueResource("clusterqueues")).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("get ClusterQueue %s: %w", name, err)
	}
	used = corev1.ResourceList{}
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsUsage")
	for _, f := range flavors {
		m, _ := f.(map[string]any)
		res, _, _ := unstructured.NestedSlice(m, "resources")
		for _, r := range res {
			rm, _ := r.(map[string]any)
			name, _ := rm["name"].(string)
			total, _ := rm["total"].(string)
			if err := addKueueQuantities(used, map[string]string{name: total}); err != nil {
				return nil, 0, 0, fmt.Errorf("ClusterQueue %s: %w", cq.GetName(), err)
			}
		}
	}
	admitted, _, _ = unstructured.NestedInt64(cq.Object, "status", "admittedWorkloads")
	pending, _, _ = unstructured.NestedInt64(cq.Object, "status", "pendingWorkloads")
	return used, admitted, pending, nil
}

func addKueueQuantities(into corev1.ResourceList, add map[string]string) error {
	for name, v := range add {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sum := into[corev1.ResourceName(name)]
		sum.Add(q)
		into[corev1.ResourceName(name)] = sum
	}
	return nil
}
