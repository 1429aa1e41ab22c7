package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The two arms that measure sparklet's container settings give the
// no-op shape exactly the injected containers' resources, or their
// security contexts, and nothing else of them.
func TestStartArmsCarryTheInjectedSettings(t *testing.T) {
	nonRoot := true
	injected := []corev1.Container{
		{Name: "sparklet-sidecar", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &nonRoot}},
		{Name: "sparklet-spark-conf", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}},
	}
	for _, c := range []struct {
		arm              int
		resources, scCtx bool
	}{{armShape, false, false}, {armShapeResources, true, false}, {armShapeSecurityCtxs, false, true}} {
		pod := barePod("p", "apache/spark:4.3.0")
		startArms[c.arm].shape(pod, "apache/spark:4.3.0", injected)
		if len(pod.Spec.InitContainers) != 2 {
			t.Fatalf("%s: %d init containers, want sparklet's two", startArms[c.arm].name, len(pod.Spec.InitContainers))
		}
		for i, got := range pod.Spec.InitContainers {
			if got.Command[0] != "/bin/sleep" || got.Image != "apache/spark:4.3.0" {
				t.Errorf("%s: init container %d runs %v in %s, want a no-op sleep in the Spark image", startArms[c.arm].name, i, got.Command, got.Image)
			}
			if same := equality.Semantic.DeepEqual(got.Resources, injected[i].Resources); same != c.resources {
				t.Errorf("%s: init container %d has the injected resources: %v, want %v", startArms[c.arm].name, i, same, c.resources)
			}
			if same := got.SecurityContext != nil && equality.Semantic.DeepEqual(got.SecurityContext, injected[i].SecurityContext); same != (c.scCtx && injected[i].SecurityContext != nil) {
				t.Errorf("%s: init container %d has the injected security context: %v", startArms[c.arm].name, i, same)
			}
		}
		if pod.Spec.InitContainers[1].Lifecycle == nil || pod.Spec.InitContainers[1].Lifecycle.PostStart == nil {
			t.Errorf("%s: the second init container has no postStart hook", startArms[c.arm].name)
		}
	}
}
