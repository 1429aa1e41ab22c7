package patches

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

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

// addCredentials gives the Spark container the driver's policy credentials.
func addCredentials(pod *corev1.Pod, p *plan, done *Status) error {
	creds := p.pol.CredentialsFor("driver")
	applyCredentials(pod, p.container(pod), creds)
	for _, c := range creds {
		if c.MountPath != "" {
			done.Volumes = append(done.Volumes, VolumeCredPfx+c.Name)
		}
	}
	return nil
}

// isolateServiceAccount turns the pod-wide token off: only the sidecar gets
// a Kubernetes credential, and the containers the policy names in
// tokenContainers keep the pod's. The API server's ServiceAccount admission
// plugin runs before mutating webhooks, so the pod usually arrives with its
// kube-api-access-* token volume mounted into every container; its mounts
// are removed from every other container, the volume too when no container
// keeps it, and what was removed is recorded in the status.
func isolateServiceAccount(pod *corev1.Pod, p *plan, done *Status) error {
	off := false
	pod.Spec.AutomountServiceAccountToken = &off
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	spark := p.container(pod).Name
	keeps := func(c corev1.Container) bool {
		return c.Name != spark && slices.Contains(p.pol.TokenContainers, c.Name)
	}
	var removed []string
	vols := pod.Spec.Volumes[:0]
	for _, v := range pod.Spec.Volumes {
		kept := false
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if !isAutoToken(v) {
					continue
				}
				if keeps(list[i]) && mountsVolume(list[i].VolumeMounts, v.Name) {
					kept = true
					if !slices.Contains(done.TokenContainers, list[i].Name) {
						done.TokenContainers = append(done.TokenContainers, list[i].Name)
					}
					continue
				}
				list[i].VolumeMounts = dropMount(list[i].VolumeMounts, v.Name)
			}
		}
		if isAutoToken(v) && !kept {
			removed = append(removed, v.Name)
			continue
		}
		vols = append(vols, v)
	}
	pod.Spec.Volumes = vols
	done.RemovedVolumes = append(done.RemovedVolumes, removed...)
	return nil
}

func mountsVolume(mounts []corev1.VolumeMount, name string) bool {
	for _, m := range mounts {
		if m.Name == name {
			return true
		}
	}
	return false
}

// isAutoToken recognises the token volume the ServiceAccount admission
// plugin adds: kube-api-access-<suffix>, projected, with a token source.
func isAutoToken(v corev1.Volume) bool {
	if !strings.HasPrefix(v.Name, "kube-api-access-") || v.Projected == nil {
		return false
	}
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func dropMount(mounts []corev1.VolumeMount, name string) []corev1.VolumeMount {
	out := mounts[:0]
	for _, m := range mounts {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}
