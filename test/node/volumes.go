package node

import (
	corev1 "k8s.io/api/core/v1"
)

// PodVolume is where the kubelet keeps a volume of pod on the node: its
// root directory's pods/<uid>/volumes/kubernetes.io~<kind>/<name>, kind
// being empty-dir, projected, configmap, secret or downward-api.
func (n *Node) PodVolume(pod *corev1.Pod, kind, name string) string {
	return n.path("kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~"+kind, name)
}
