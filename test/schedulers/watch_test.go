package schedulers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	c := func(cpu, mem string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}
	}
	sidecar := func(cpu, mem string) corev1.Container {
		s := c(cpu, mem)
		s.RestartPolicy = &always
		return s
	}
	for _, tc := range []struct {
		name     string
		spec     corev1.PodSpec
		cpu, mem string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{c("1", "1Gi"), c("500m", "512Mi")}}, "1500m", "1536Mi"},
		{"a native sidecar adds to the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("50m", "64Mi")}, Containers: []corev1.Container{c("1", "1Gi")}}, "1050m", "1088Mi"},
		{"a small init container counts for nothing", corev1.PodSpec{
			InitContainers: []corev1.Container{c("100m", "32Mi"), sidecar("50m", "64Mi")}, Containers: []corev1.Container{c("1", "1Gi")}}, "1050m", "1088Mi"},
		{"a large init container counts with the sidecars started before it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("50m", "64Mi"), c("2", "100Mi")}, Containers: []corev1.Container{c("1", "1Gi")}}, "2050m", "1088Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tc.spec})
			if got.Cpu().Cmp(resource.MustParse(tc.cpu)) != 0 || got.Memory().Cmp(resource.MustParse(tc.mem)) != 0 {
				t.Errorf("cpu %s memory %s, want %s and %s", got.Cpu(), got.Memory(), tc.cpu, tc.mem)
			}
		})
	}
}
