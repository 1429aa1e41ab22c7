package node

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SecretVolume is the directory where the kubelet mounted pod's Secret
// volume of that name: <root-dir>/pods/<uid>/volumes/kubernetes.io~secret/
// <volume> (kubernetes v1.37, pkg/volume/secret/secret.go and
// pkg/kubelet/kubelet_getters.go). It fails unless the kubelet mounted a
// tmpfs there, as it does for every Secret volume.
func (n *Node) SecretVolume(pod *corev1.Pod, volume string) (string, error) {
	dir := n.PodVolume(pod, "secret", volume)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// mount ID, parent ID, major:minor, root, mount point, options,
		// optional fields, "-", filesystem type, ... (proc(5)).
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || filepath.Clean(fields[4]) != dir {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "tmpfs" {
				return dir, nil
			}
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no tmpfs mounted at %s for Secret volume %s of pod %s/%s", dir, volume, pod.Namespace, pod.Name)
}

// PodVolume is where the kubelet keeps a volume of pod on the node: its
// root directory's pods/<uid>/volumes/kubernetes.io~<kind>/<name>, kind
// being empty-dir, projected, configmap, secret or downward-api.
func (n *Node) PodVolume(pod *corev1.Pod, kind, name string) string {
	return n.path("kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~"+kind, name)
}
