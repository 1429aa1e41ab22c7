package sidecar

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotaHeadroom refuses a resize that would take a ResourceQuota of the
// namespace over its hard memory, naming the quota and what is left. The
// API server's quota admission judges the resize again (it evaluates
// pods/resize); this answers first, with the numbers. Quotas with scopes
// are left to the API server alone.
func (a *API) quotaHeadroom(req *request, pod *corev1.Pod, ask resizeAsk) error {
	var cur resource.Quantity
	for _, c := range pod.Spec.Containers {
		if c.Name == ask.container {
			cur = c.Resources.Limits[corev1.ResourceMemory]
		}
	}
	grow := ask.memory.DeepCopy()
	grow.Sub(cur)
	if grow.Sign() <= 0 {
		return nil
	}
	quotas, err := a.client.ResourceQuotas(a.namespace).List(req.Context(), metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("reading the namespace's ResourceQuotas before resizing executor %q: %w", pod.Name, err)
	}
	for _, q := range quotas.Items {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			continue
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory} {
			hard, ok := q.Status.Hard[name]
			if !ok {
				continue
			}
			left := hard.DeepCopy()
			left.Sub(q.Status.Used[name])
			if grow.Cmp(left) > 0 {
				used := q.Status.Used[name]
				return fmt.Errorf("executor %q: growing its memory by %s to %s would exceed ResourceQuota %s (%s: %s used of %s, %s left)",
					pod.Name, grow.String(), ask.memory.String(), q.Name, name, used.String(), hard.String(), left.String())
			}
		}
	}
	return nil
}
