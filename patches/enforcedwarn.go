package patches

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// warnEnforcedReplaces warns, field by field, where the policy's enforced
// driver settings will replace a value the pod set differently, so that
// nothing of the user's is replaced silently. The warnings name the field
// by its path in the pod.
func warnEnforcedReplaces(pod *corev1.Pod, p *plan) error {
	s := p.pol.Driver.Enforced
	c := p.container(pod)
	var fields []string
	differs := func(field string, have, want any, set bool) {
		if set && !equality.Semantic.DeepEqual(have, want) {
			fields = append(fields, field)
		}
	}
	cpath := fmt.Sprintf("spec.containers[%s]", c.Name)
	for _, e := range s.Env {
		if i := envIndex(c.Env, e.Name); i >= 0 {
			differs(fmt.Sprintf("%s.env[%s]", cpath, e.Name), c.Env[i], e, true)
		}
	}
	for _, v := range s.Volumes {
		if i := slices.IndexFunc(pod.Spec.Volumes, func(have corev1.Volume) bool { return have.Name == v.Name }); i >= 0 {
			differs(fmt.Sprintf("spec.volumes[%s]", v.Name), pod.Spec.Volumes[i], v, true)
		}
	}
	for _, m := range s.VolumeMounts {
		if i := slices.IndexFunc(c.VolumeMounts, func(have corev1.VolumeMount) bool { return have.MountPath == m.MountPath }); i >= 0 {
			differs(fmt.Sprintf("%s.volumeMounts[%s]", cpath, m.MountPath), c.VolumeMounts[i], m, true)
		}
	}
	for _, m := range []struct {
		field     string
		have, set map[string]string
	}{{"spec.nodeSelector", pod.Spec.NodeSelector, s.NodeSelector}, {"metadata.labels", pod.Labels, s.Labels}, {"metadata.annotations", pod.Annotations, s.Annotations}} {
		for _, k := range slices.Sorted(maps.Keys(m.set)) {
			have, ok := m.have[k]
			differs(fmt.Sprintf("%s[%s]", m.field, k), have, m.set[k], ok)
		}
	}
	for _, f := range []struct{ field, have, want string }{
		{"spec.priorityClassName", pod.Spec.PriorityClassName, s.PriorityClassName},
		{"spec.schedulerName", pod.Spec.SchedulerName, s.SchedulerName},
		{"spec.serviceAccountName", pod.Spec.ServiceAccountName, s.ServiceAccountName},
	} {
		differs(f.field, f.have, f.want, f.have != "" && f.have != "default" && f.want != "")
	}
	differs("spec.securityContext", pod.Spec.SecurityContext, s.SecurityContext, pod.Spec.SecurityContext != nil && s.SecurityContext != nil)
	differs(cpath+".securityContext", c.SecurityContext, s.ContainerSecurityContext, c.SecurityContext != nil && s.ContainerSecurityContext != nil)
	if r := s.Resources; r != nil {
		for _, l := range []struct {
			field      string
			have, want corev1.ResourceList
		}{{"requests", c.Resources.Requests, r.Requests}, {"limits", c.Resources.Limits, r.Limits}} {
			for _, name := range slices.Sorted(maps.Keys(l.want)) {
				have, ok := l.have[name]
				differs(fmt.Sprintf("%s.resources.%s.%s", cpath, l.field, name), have, l.want[name], ok)
			}
		}
	}
	for _, f := range fields {
		p.warn(fmt.Sprintf("sparklet replaced the pod's %s with the value the platform policy enforces (driver.enforced)", f))
	}
	return nil
}
