package podpatch

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSameIsDeepEqual: same agrees with reflect.DeepEqual on pods that
// differ in one place each, and on equal ones.
func TestSameIsDeepEqual(t *testing.T) {
	base := func() *corev1.Pod {
		one := int64(1)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{
				ActiveDeadlineSeconds: &one,
				Containers: []corev1.Container{{Name: "c", Args: []string{"x"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			},
		}
	}
	changes := map[string]func(*corev1.Pod){
		"nothing":           func(*corev1.Pod) {},
		"label value":       func(p *corev1.Pod) { p.Labels["a"] = "c" },
		"label added":       func(p *corev1.Pod) { p.Labels["z"] = "b" },
		"labels empty":      func(p *corev1.Pod) { p.Labels = map[string]string{} },
		"labels nil":        func(p *corev1.Pod) { p.Labels = nil },
		"annotations empty": func(p *corev1.Pod) { p.Annotations = map[string]string{} },
		"pointer value":     func(p *corev1.Pod) { two := int64(2); p.Spec.ActiveDeadlineSeconds = &two },
		"pointer cleared":   func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
		"args empty":        func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{} },
		"args nil":          func(p *corev1.Pod) { p.Spec.Containers[0].Args = nil },
		"arg":               func(p *corev1.Pod) { p.Spec.Containers[0].Args[0] = "y" },
		"quantity": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
		},
		"quantity same form": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		},
		"container added": func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{}) },
		"phase":           func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning },
	}
	for name, change := range changes {
		a, b := base(), base()
		change(b)
		want := reflect.DeepEqual(a, b)
		if got := same(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()); got != want {
			t.Errorf("%s: same %t, DeepEqual %t", name, got, want)
		}
		if name != "nothing" && name != "quantity same form" && want {
			t.Errorf("%s: the change made no difference; the case tests nothing", name)
		}
	}
}
