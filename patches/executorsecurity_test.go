package patches

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/policy"
)

// restrictedSpark is a Spark container's context that passes Pod Security
// restricted with the apache/spark images (USER spark, uid 185).
func restrictedSpark() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](185), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func TestExecutorInheritsDriverSecurity(t *testing.T) {
	podCtx := &corev1.PodSecurityContext{FSGroup: ptr.To[int64](185)}
	with := func(uid int64) *corev1.SecurityContext {
		c := restrictedSpark()
		c.RunAsUser = &uid
		return c
	}
	for name, tc := range map[string]struct {
		executor      *corev1.SecurityContext
		policyDefault *corev1.SecurityContext
		want          *corev1.SecurityContext
	}{
		"none of its own: the driver's": {want: restrictedSpark()},
		// Spark 4.3.0 sets allowPrivilegeEscalation and nothing else.
		"Spark 4.3's allowPrivilegeEscalation alone": {executor: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}, want: restrictedSpark()},
		"its own field (a pod template) is kept":     {executor: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}, want: with(1000)},
		"the policy's default comes before":          {policyDefault: &corev1.SecurityContext{RunAsUser: ptr.To[int64](2000)}, want: with(2000)},
		"the policy's default fills Spark 4.3's": {
			executor: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}, policyDefault: &corev1.SecurityContext{RunAsUser: ptr.To[int64](2000)}, want: with(2000)},
	} {
		t.Run(name, func(t *testing.T) {
			in := executorInput(t)
			in.Driver.Pod.Spec.SecurityContext = podCtx
			in.Driver.Pod.Spec.Containers[0].SecurityContext = restrictedSpark()
			if tc.policyDefault != nil {
				pol := *in.Policy
				pol.Executor.Defaults = policy.PodSettings{ContainerSecurityContext: tc.policyDefault}
				in.Policy = &pol
			}
			pod := executorPod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = tc.executor.DeepCopy() })
			if _, err := Executor(pod, in); err != nil {
				t.Fatal(err)
			}
			if got := pod.Spec.Containers[0].SecurityContext; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("executor container's securityContext %+v, want %+v", got, tc.want)
			}
			if got := pod.Spec.SecurityContext; !reflect.DeepEqual(got, podCtx) {
				t.Errorf("executor pod's securityContext %+v, want the driver pod's %+v", got, podCtx)
			}
		})
	}
}

func TestExecutorNeverInheritsPrivileged(t *testing.T) {
	in := executorInput(t)
	in.Driver.Pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	_, err := Executor(executorPod(), in)
	var r *Refused
	if !errors.As(err, &r) || r.Reason != "privileged" {
		t.Fatalf("executor of a privileged driver: %v, want the privileged refusal", err)
	}
}

func TestExecutorOfDriverWithoutSecurityContext(t *testing.T) {
	pod := executorPod()
	if _, err := Executor(pod, executorInput(t)); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.SecurityContext != nil || pod.Spec.Containers[0].SecurityContext != nil {
		t.Errorf("executor of a driver without security contexts got %+v and %+v", pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext)
	}
}
