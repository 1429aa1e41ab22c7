package patches

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/vocab"
)

func refuseHostNetwork(pod *corev1.Pod, _ *plan) error {
	if pod.Spec.HostNetwork {
		return &Refused{Reason: "host-network", Message: "spec.hostNetwork: true is not allowed for Spark drivers: " +
			"the sidecar listens on 127.0.0.1, which would be the node's; remove hostNetwork"}
	}
	return nil
}

// refuseReservedNames refuses a first injection whose pod already uses a
// name sparklet injects; on an injected pod those are sparklet's own.
func refuseReservedNames(pod *corev1.Pod, _ *plan) error {
	if _, injected := pod.Annotations[vocab.AnnotationStatus]; injected {
		return nil
	}
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "sparklet-") {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"spec.volumes: the name %q is reserved for sparklet (prefix sparklet-); rename the volume", v.Name)}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == SidecarName || c.Name == InitName || c.Name == ConfInitName {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"spec.initContainers: the name %q is reserved for sparklet; rename the container", c.Name)}
		}
	}
	return nil
}

func checkLimits(pod *corev1.Pod, p *plan) error {
	lim := p.pol.Limits
	if lim.MaxExecutors > 0 {
		for _, k := range []string{"spark.executor.instances", "spark.dynamicAllocation.maxExecutors", "spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.initialExecutors"} {
			v, ok := p.conf[k]
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("%s=%q is not a whole number", k, v)}
			}
			if n > lim.MaxExecutors {
				return &Refused{Reason: "over-limit", Message: fmt.Sprintf(
					"%s=%d exceeds the policy limit limits.maxExecutors=%d in namespace %s; lower it", k, n, lim.MaxExecutors, p.in.Namespace)}
			}
		}
	}
	if err := checkExecutorConf(p); err != nil {
		return err
	}
	return checkContainerLimits(p.container(pod), lim.Driver, "driver")
}

// checkExecutorConf checks the executor memory the conf asks for, computed
// as Spark does (ExecutorMemoryOf), and says what it is made of; the CPU
// and the rest are judged with the executor pod (checkExecutors).
func checkExecutorConf(p *plan) error {
	lim := p.pol.Limits.Executor
	if lim.MaxMemory == nil {
		return nil
	}
	image, _, _ := sparkValue(p.conf, keyExecutorImage, newestLine)
	m, err := ExecutorMemoryOf(p.conf, isSpark3Image(image))
	if err != nil {
		return &Refused{Reason: "bad-spark-conf", Message: err.Error()}
	}
	total := resource.NewQuantity(m.Total()<<20, resource.BinarySI)
	if total.Cmp(*lim.MaxMemory) > 0 {
		return &Refused{Reason: "over-limit", Field: fieldMemoryRequest, Message: fmt.Sprintf(
			"executors would use %dMi (spark.executor.memory %dMi + overhead %dMi + off-heap %dMi + PySpark %dMi, as Spark sizes executor pods "+
				"from %s), over the policy limit limits.executor.maxMemory=%s; lower spark.executor.memory or the others",
			m.Total(), m.Heap, m.Overhead, m.OffHeap, m.PySpark, setBy(p.conf, fieldMemoryRequest), lim.MaxMemory)}
	}
	return nil
}

func checkImages(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	if err := p.pol.CheckImage(c.Image); err != nil {
		return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	for _, k := range []string{"spark.kubernetes.container.image", "spark.kubernetes.executor.container.image"} {
		if img, ok := p.conf[k]; ok {
			if err := p.pol.CheckImage(img); err != nil {
				return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf("%s: %v", k, err)}
			}
		}
	}
	return nil
}
