package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/policy"
)

func TestWarnNonRootByName(t *testing.T) {
	nonRoot := &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
	for name, tc := range map[string]struct {
		pod        *corev1.PodSecurityContext
		container  *corev1.SecurityContext
		defaults   policy.PodSettings
		enforced   policy.PodSettings
		wantWarned bool
	}{
		"runAsNonRoot without a uid":             {container: nonRoot, wantWarned: true},
		"runAsNonRoot on the pod, no uid":        {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, wantWarned: true},
		"with runAsUser":                         {container: restrictedSpark()},
		"uid on the pod":                         {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](185)}, container: nonRoot},
		"no security context":                    {},
		"runAsNonRoot false":                     {container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}},
		"the policy's default, no uid":           {defaults: policy.PodSettings{ContainerSecurityContext: nonRoot}, wantWarned: true},
		"the pod's own context before a default": {container: restrictedSpark(), defaults: policy.PodSettings{ContainerSecurityContext: nonRoot}},
		"an enforced context replaces the pod's": {container: restrictedSpark(), enforced: policy.PodSettings{ContainerSecurityContext: nonRoot}, wantWarned: true},
	} {
		t.Run(name, func(t *testing.T) {
			pol := *mustPolicy(t, testPolicy)
			pol.Driver.Defaults, pol.Driver.Enforced = tc.defaults, tc.enforced
			pod := driverPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = tc.pod
				p.Spec.Containers[0].SecurityContext = tc.container.DeepCopy()
			})
			res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: &pol, Version: "test", AppID: "spark-test"})
			if err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, w := range res.Warnings {
				warned = warned || strings.Contains(w, "non-numeric user")
			}
			if warned != tc.wantWarned {
				t.Errorf("warned %v, want %v: %q", warned, tc.wantWarned, res.Warnings)
			}
		})
	}
}
