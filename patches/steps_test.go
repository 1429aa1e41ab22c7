package patches

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestStepNames(t *testing.T) {
	seen := map[string]bool{}
	names := []string{}
	for _, c := range driverChecks {
		names = append(names, c.name)
	}
	for _, s := range driverSteps {
		names = append(names, s.name)
	}
	for _, n := range names {
		if n == "" || seen[n] {
			t.Errorf("step name %q is empty or used twice", n)
		}
		seen[n] = true
	}
}

// TestRefusalNamesItsStep: a refusal comes wrapped in the StepError of the
// check that refused, with the refusal's own message, and the pod is left
// as it was.
func TestRefusalNamesItsStep(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	cases := []struct {
		step string
		pod  *corev1.Pod
	}{
		{"spark container", driverPod(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other", Image: "busybox"})
			p.Spec.Containers[0].Name = "app"
		})},
		{"host network", driverPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{"reserved names", driverPod(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "sparklet-mine"}} })},
		{"spark conf", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.master local"}
		})},
		{"limits", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.executor.instances 50"}
		})},
		{"images", driverPod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil/spark:1" })},
		{"executors", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.kubernetes.executor.limit.cores 9"}
		})},
		{"fetch", driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{"sparklet.io/fetch": "not a url"} })},
		{"app id", driverPod(func(p *corev1.Pod) { p.Labels[vocab.LabelAppID] = "not valid!" })},
		// Two faults: the earlier check's refusal wins.
		{"host network", driverPod(func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.master local"}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			_, err := inject(t, tc.pod, pol)
			var se *StepError
			var r *Refused
			if !errors.As(err, &se) || !errors.As(err, &r) {
				t.Fatalf("err = %#v, want a refusal in a StepError", err)
			}
			if se.Step != tc.step {
				t.Errorf("step = %q, want %q (refusal %s: %s)", se.Step, tc.step, r.Reason, r.Message)
			}
			if err.Error() != r.Message {
				t.Errorf("message = %q, want the refusal's own %q", err.Error(), r.Message)
			}
			if !reflect.DeepEqual(before, tc.pod) {
				t.Error("a refused pod was changed")
			}
		})
	}
}
