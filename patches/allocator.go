package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// keyAllocator picks Spark's executor pods allocator (Config.scala:
// "direct" by default; "statefulset" since 3.3, "deployment" since 4.2).
const keyAllocator = "spark.kubernetes.allocation.pods.allocator"

// refuseControllerAllocator refuses every allocator but "direct". The
// statefulset and deployment allocators (StatefulSetPodsAllocator.scala,
// DeploymentPodsAllocator.scala) POST a StatefulSet or Deployment whose
// controller then creates the executors with the namespace's credentials,
// past the sidecar and the executor policy; the sidecar refuses /apis/apps.
func refuseControllerAllocator(_ *corev1.Pod, p *plan) error {
	v, ok := p.conf[keyAllocator]
	if !ok || strings.TrimSpace(v) == "direct" {
		return nil
	}
	return &Refused{Reason: "allocator", Message: fmt.Sprintf(
		"%s=%s: only the direct allocator works with sparklet: the statefulset and deployment allocators have a "+
			"StatefulSet or Deployment controller create the executors, past the sidecar and the executor policy; "+
			"remove the key or set it to direct", keyAllocator, v)}
}
