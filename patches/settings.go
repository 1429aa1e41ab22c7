package patches

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

// upsert adds item to list when no element has its key. When one has, it is
// replaced only if replace is set. The position of existing elements is kept.
func upsert[T any](list []T, item T, key func(T) string, replace bool) []T {
	for i := range list {
		if key(list[i]) == key(item) {
			if replace {
				list[i] = item
			}
			return list
		}
	}
	return append(list, item)
}

func envName(e corev1.EnvVar) string                 { return e.Name }
func volumeName(v corev1.Volume) string              { return v.Name }
func mountPath(m corev1.VolumeMount) string          { return m.MountPath }
func secretRef(r corev1.LocalObjectReference) string { return r.Name }

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
	if s.SecurityContext != nil && (enforced || pod.Spec.SecurityContext == nil) {
		pod.Spec.SecurityContext = s.SecurityContext.DeepCopy()
	}
	if s.ContainerSecurityContext != nil && (enforced || c.SecurityContext == nil) {
		c.SecurityContext = s.ContainerSecurityContext.DeepCopy()
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

// applyCredentials exposes policy credentials to the container: env vars
// from Secret keys, and the Secret as read-only files.
func applyCredentials(pod *corev1.Pod, c *corev1.Container, creds []policy.Credential) {
	for _, cred := range creds {
		for _, e := range cred.Env {
			c.Env = upsert(c.Env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: cred.SecretName},
					Key:                  e.Key,
				},
			}}, envName, false) // a user's own variable of the same name wins
		}
		if cred.MountPath == "" {
			continue
		}
		vol := VolumeCredPfx + cred.Name
		pod.Spec.Volumes = upsert(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: cred.SecretName},
		}}, volumeName, true)
		c.VolumeMounts = upsert(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: cred.MountPath, ReadOnly: true}, mountPath, true)
	}
}
