package patches

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// priorStatus is what an earlier injection of the pod recorded; its zero
// value, for a pod not injected yet, owns nothing.
type priorStatus struct{ Status }

// owns tells whether an earlier injection added the volume or env var of
// this name, so that it is sparklet's, not the user's.
func (s priorStatus) owns(name string) bool {
	return slices.Contains(s.Volumes, name) || slices.Contains(s.Env, name)
}

// readPrior reads the status annotation of an injected pod into the plan.
func readPrior(pod *corev1.Pod, p *plan) error {
	if raw, ok := pod.Annotations[vocab.AnnotationStatus]; ok {
		_ = json.Unmarshal([]byte(raw), &p.prior.Status)
	}
	return nil
}

// userEnv is the container's env var name when the user set it, not an
// earlier injection.
func (p *plan) userEnv(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	i := envIndex(c.Env, name)
	if i < 0 || p.prior.owns(name) {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}
