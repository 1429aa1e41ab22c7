package node

import (
	corev1 "k8s.io/api/core/v1"
)

// EmptyDir is where the kubelet keeps an emptyDir volume of pod on the
// node (its root directory's pods/<uid>/volumes/kubernetes.io~empty-dir).
func (n *Node) EmptyDir(pod *corev1.Pod, volume string) string {
	return n.path("kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", volume)
}
