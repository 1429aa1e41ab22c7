package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/policy"
)

// Spark 4.2's ExecutorResizePlugin grows a running executor's memory in
// place: when the executor container's memory usage (metrics.k8s.io) is
// above spark.kubernetes.executor.resizeThreshold of its limit, it sets
// the container's memory request and limit to limit x (1 +
// spark.kubernetes.executor.resizeFactor) through the pods/resize
// subresource (ExecutorResizePlugin.scala, read in the 4.3.0 jar). The JVM
// keeps its heap (-Xmx), so what it gains is room for off-heap memory.

// CheckExecutorResize says whether the policy lets an executor's Spark
// container take memory as its memory request and limit, and why not: the
// container must be the executor's Spark container, it may only grow,
// limits.executor.maxMemory caps it, and an enforced memory key (which
// fixes executors' size) forbids it.
func CheckExecutorResize(pod *corev1.Pod, container string, memory resource.Quantity, pol *policy.Effective) error {
	i, err := findContainer(pod, executorContainerNames)
	if err != nil {
		return err
	}
	c := pod.Spec.Containers[i]
	if c.Name != container {
		return &Refused{Reason: "bad-resize", Message: fmt.Sprintf(
			"executor %q: only its Spark container %q is resized, not %q", pod.Name, c.Name, container)}
	}
	if cur, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && memory.Cmp(cur) < 0 {
		return &Refused{Reason: "bad-resize", Field: fieldMemoryLimit, Message: fmt.Sprintf(
			"executor %q: memory %s is below its limit %s; the sidecar only grows executors, whose JVM keeps its heap", pod.Name, memory.String(), cur.String())}
	}
	if max := pol.Limits.Executor.MaxMemory; max != nil && memory.Cmp(*max) > 0 {
		return &Refused{Reason: "over-limit", Field: fieldMemoryLimit, Message: fmt.Sprintf(
			"executor %q: memory %s (%s) is over the policy limit limits.executor.maxMemory=%s; it keeps %s",
			pod.Name, memory.String(), mebibytes(memory), max.String(), c.Resources.Limits.Memory().String())}
	}
	for _, k := range executorMemoryKeys {
		if v, ok := pol.Spark.Enforced[k]; ok {
			return &Refused{Reason: "enforced", Message: fmt.Sprintf(
				"executor %q: the policy enforces %s=%s, which sizes every executor's memory; it is not resized", pod.Name, k, v)}
		}
	}
	return nil
}

// mebibytes writes a byte quantity in MiB, as Spark's memory keys read.
func mebibytes(q resource.Quantity) string {
	return fmt.Sprintf("%.1fMi", float64(q.Value())/(1<<20))
}
