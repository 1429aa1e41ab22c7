package patches

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// SchedulingDigest is the digest of a driver's sparklet.io/scheduling, the
// batch scheduling its executors are stamped with; an absent annotation
// has the digest of the empty string. The annotation stays editable after
// admission, so the webhook records this digest in the sidecar's env,
// which is not, and the sidecar checks it before it starts.
func SchedulingDigest(pod *corev1.Pod) string {
	sum := sha256.Sum256([]byte(pod.Annotations[vocab.AnnotationScheduling]))
	return hex.EncodeToString(sum[:])
}

// recordSchedulingDigest writes SchedulingDigest into the sidecar's env,
// once the gang step has written the annotation: the gang is sized from
// the pod with the sidecar in it, so the sidecar step cannot know it.
func recordSchedulingDigest(pod *corev1.Pod, _ *plan, _ *Status) error {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == SidecarName {
			c.Env = upsert(c.Env, corev1.EnvVar{Name: vocab.EnvSchedulingSHA256, Value: SchedulingDigest(pod)}, envName, true)
			return nil
		}
	}
	return nil
}
