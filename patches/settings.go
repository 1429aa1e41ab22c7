package patches

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

// applyDriverPolicy overlays the driver policy's pod settings.
func applyDriverPolicy(pod *corev1.Pod, p *plan, _ *Status) error {
	// The ServiceAccount admission plugin, which runs before webhooks, fills
	// in "default" for a pod that names no service account: treat it as unset.
	if sa := p.pol.Driver.Defaults.ServiceAccountName; sa != "" && pod.Spec.ServiceAccountName == "default" {
		pod.Spec.ServiceAccountName = sa
	}
	applySettings(pod, p.container(pod), p.pol.Driver.Defaults, false)
	applySettings(pod, p.container(pod), p.pol.Driver.Enforced, true)
	return nil
}

// applySettings overlays policy pod settings on a pod and its Spark
// container. Defaults (enforced=false) never replace what the pod has;
// enforced values always do.
func applySettings(pod *corev1.Pod, c *corev1.Container, s policy.PodSettings, enforced bool) {
	for _, e := range s.Env {
		c.Env = upsert(c.Env, e, envName, enforced)
	}
	for _, v := range s.Volumes {
		pod.Spec.Volumes = upsert(pod.Spec.Volumes, v, volumeName, enforced)
	}
	for _, m := range s.VolumeMounts {
		c.VolumeMounts = upsert(c.VolumeMounts, m, mountPath, enforced)
	}
	for _, t := range s.Tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
	pod.Spec.NodeSelector = setKeys(pod.Spec.NodeSelector, s.NodeSelector, enforced)
	pod.Labels = setKeys(pod.Labels, s.Labels, enforced)
	pod.Annotations = setKeys(pod.Annotations, s.Annotations, enforced)
	setString(&pod.Spec.PriorityClassName, s.PriorityClassName, enforced)
	setString(&pod.Spec.SchedulerName, s.SchedulerName, enforced)
	setString(&pod.Spec.ServiceAccountName, s.ServiceAccountName, enforced)
	// A default security context fills the fields the pod leaves unset:
	// Spark 4.3 sets allowPrivilegeEscalation on every executor container.
	switch {
	case s.SecurityContext == nil:
	case enforced || pod.Spec.SecurityContext == nil:
		pod.Spec.SecurityContext = s.SecurityContext.DeepCopy()
	default:
		fillUnset(pod.Spec.SecurityContext, s.SecurityContext)
	}
	switch {
	case s.ContainerSecurityContext == nil:
	case enforced || c.SecurityContext == nil:
		c.SecurityContext = s.ContainerSecurityContext.DeepCopy()
	default:
		fillUnset(c.SecurityContext, s.ContainerSecurityContext)
	}
	for _, r := range s.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = upsert(pod.Spec.ImagePullSecrets, r, secretRef, false)
	}
	if s.Resources != nil {
		c.Resources.Requests = setResources(c.Resources.Requests, s.Resources.Requests, enforced)
		c.Resources.Limits = setResources(c.Resources.Limits, s.Resources.Limits, enforced)
	}
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range list {
		if reflect.DeepEqual(have, t) {
			return true
		}
	}
	return false
}

func setKeys(dst, src map[string]string, enforced bool) map[string]string {
	for k, v := range src {
		if dst == nil {
			dst = map[string]string{}
		}
		if _, ok := dst[k]; ok && !enforced {
			continue
		}
		dst[k] = v
	}
	return dst
}

func setString(dst *string, v string, enforced bool) {
	if v != "" && (enforced || *dst == "") {
		*dst = v
	}
}

func setResources(dst, src corev1.ResourceList, enforced bool) corev1.ResourceList {
	for name, q := range src {
		if dst == nil {
			dst = corev1.ResourceList{}
		}
		if _, ok := dst[name]; ok && !enforced {
			continue
		}
		dst[name] = q.DeepCopy()
	}
	return dst
}
