package patches

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/vocab"
)

// The executor pod fields a refusal can name (Refused.Field).
const (
	fieldCPURequest    = "resources.requests.cpu"
	fieldCPULimit      = "resources.limits.cpu"
	fieldMemoryRequest = "resources.requests.memory"
	fieldMemoryLimit   = "resources.limits.memory"
)

func volumeField(name string) string { return "spec.volumes[" + name + "]" }

// keyPodTemplate names the executor pod template file, which Spark reads
// in the JVM (KubernetesUtils.loadPodFromTemplate).
const keyPodTemplate = "spark.kubernetes.executor.podTemplateFile"

// admissionAppID labels the executor admission judges; any value works, as
// it only has to match the ExecutorInput's.
const admissionAppID = "spark-admission"

// checkExecutors judges, as the sidecar will judge every executor
// (Executor), the executor pod Spark will ask for from the driver's
// configuration (executorOf). A driver whose every executor the sidecar
// refuses would wait for executors forever, so it is refused here, naming
// the Spark keys that shape the field at fault.
func checkExecutors(_ *corev1.Pod, p *plan) error {
	if f, ok := p.conf[keyPodTemplate]; ok {
		p.warn(fmt.Sprintf("%s=%s: the JVM reads the executor pod template when it builds each executor, so what it sets was "+
			"not checked at admission; the sidecar judges every executor at run time", keyPodTemplate, f))
	}
	ex, err := executorOf(p.conf)
	if err != nil {
		return &Refused{Reason: "bad-spark-conf", Message: err.Error()}
	}
	// The driver has no scheduling recorded yet, so no gang to warn of.
	_, err = Executor(ex, ExecutorInput{Policy: p.pol, AppID: admissionAppID, Driver: &DriverFacts{Conf: p.conf}})
	var r *Refused
	if err == nil || !errors.As(err, &r) {
		return err
	}
	msg := strings.TrimPrefix(r.Message, fmt.Sprintf("executor %q: ", ex.Name))
	return &Refused{Reason: r.Reason, Field: r.Field, Message: fmt.Sprintf(
		"%s: the sidecar would refuse every executor Spark asks for: %s", setBy(p.conf, r.Field), msg)}
}

// executorOf is the executor pod Spark builds from conf, as far as the
// sidecar judges it: BasicExecutorFeatureStep's image, CPU request and
// limit and memory (ExecutorMemoryOf), and MountVolumesFeatureStep's
// hostPath volumes (v3.5.x, v4.x). Every key is read through the table
// (sparkValue). Errors name the key at fault.
func executorOf(conf map[string]string) (*corev1.Pod, error) {
	image, _, _ := sparkValue(conf, keyExecutorImage, newestLine)
	line := lineOfImage(image)
	c := corev1.Container{Name: executorContainerNames[0], Image: image, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{},
	}}
	request, from := "1", keyExecutorCores
	if v, _, ok := sparkValue(conf, keyRequestCores, line); ok {
		request, from = v, keyRequestCores
	} else if v, _, ok := sparkValue(conf, keyExecutorCores, line); ok {
		request = v
	}
	if err := setQuantity(&c.Resources.Requests, corev1.ResourceCPU, request, from); err != nil {
		return nil, fmt.Errorf("%s=%q is not a CPU quantity such as 1 or 500m", from, request)
	}
	if v, _, ok := sparkValue(conf, keyLimitCores, line); ok {
		if err := setQuantity(&c.Resources.Limits, corev1.ResourceCPU, v, keyLimitCores); err != nil {
			return nil, fmt.Errorf("%s=%q is not a CPU quantity such as 1 or 500m", keyLimitCores, v)
		}
	}
	m, err := ExecutorMemoryOf(conf, line.major == 3)
	if err != nil {
		return nil, err
	}
	memory := resource.MustParse(fmt.Sprintf("%dMi", m.Total()))
	c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory] = memory, memory.DeepCopy()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: hostPathVolumes(conf)}}
	pod.Name = "exec-1"
	pod.Labels = map[string]string{vocab.LabelRole: "executor", vocab.LabelAppID: admissionAppID}
	return pod, nil
}

// hostPathVolumes are the hostPath volumes of
// spark.kubernetes.executor.volumes.hostPath.<name>.options.path.
// KubernetesVolumeUtils.parseVolumesWithPrefix takes the volume type and
// name from the first two dot-separated parts after the prefix.
func hostPathVolumes(conf map[string]string) []corev1.Volume {
	var vols []corev1.Volume
	hostPath := func(k, _ string) bool { return strings.HasPrefix(k, prefixExecutorVols+"hostPath.") }
	for _, k := range sortedWhere(conf, hostPath) {
		name, opt, ok := strings.Cut(strings.TrimPrefix(k, prefixExecutorVols+"hostPath."), ".")
		if !ok || opt != "mount.path" {
			continue
		}
		path := conf[prefixExecutorVols+"hostPath."+name+".options.path"]
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
	}
	return vols
}

// setBy names the Spark keys in conf that set field of every executor, as
// key=value; Spark's defaults or the executor policy when none did.
func setBy(conf map[string]string, field string) string {
	var shapes string
	switch field {
	case fieldCPURequest:
		shapes = shapesCPURequest
	case fieldCPULimit:
		shapes = shapesCPULimit
	case fieldMemoryRequest, fieldMemoryLimit:
		shapes = shapesMemory
	}
	var set []string
	for _, k := range executorKeys {
		if k.shapes != shapes || shapes == "" {
			continue
		}
		if shapes == shapesCPURequest && k.key == keyExecutorCores && hasKey(conf, keyRequestCores) {
			continue // the request wins over the cores
		}
		for _, key := range append([]string{k.key}, k.alternates...) {
			if v, ok := conf[key]; ok {
				set = append(set, key+"="+v)
			}
		}
	}
	if name, ok := strings.CutPrefix(field, "spec.volumes["); ok {
		prefix := prefixExecutorVols + "hostPath." + strings.TrimSuffix(name, "]") + "."
		for _, k := range slices.Sorted(maps.Keys(conf)) {
			if strings.HasPrefix(k, prefix) {
				set = append(set, k+"="+conf[k])
			}
		}
	}
	if len(set) == 0 && shapes != "" {
		return "Spark's default executor size"
	}
	if len(set) == 0 {
		return "the executor policy"
	}
	return strings.Join(set, ", ")
}

func hasKey(conf map[string]string, key string) bool { _, ok := conf[key]; return ok }
