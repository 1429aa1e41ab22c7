package policy

import (
	"path"
	"strings"
)

// KubeletPods is where the kubelet keeps each pod's volumes on the node,
// projected service-account tokens among them
// (<root>/pods/<uid>/volumes/kubernetes.io~projected/<volume>/token). The
// root is the kubelet's --root-dir, /var/lib/kubelet by default
// (kubernetes cmd/kubelet/app/options/options.go, v1.33).
const KubeletPods = "/var/lib/kubelet/pods"

// HostProc is the node's /proc: /proc/<pid>/root of any process on the
// node is that process's filesystem.
const HostProc = "/proc"

// HostPathReaches says how a hostPath reaches the service-account tokens
// on the node, or "": it is, is inside, or holds the kubelet's pod
// directory or the node's /proc. Dot segments are resolved first, as the
// node would.
func HostPathReaches(p string) string {
	clean := path.Clean("/" + p)
	for _, dir := range []struct{ path, name string }{
		{KubeletPods, "the kubelet's pod directory " + KubeletPods},
		{HostProc, "the node's " + HostProc},
	} {
		switch {
		case clean == dir.path:
			return "is " + dir.name
		case strings.HasPrefix(clean, dir.path+"/"):
			return "is inside " + dir.name
		case clean == "/" || strings.HasPrefix(dir.path, clean+"/"):
			return "holds " + dir.name
		}
	}
	return ""
}
