package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// sidecarEnv is the sidecar's env in an injected pod, as the sidecar reads it.
func sidecarEnv(t *testing.T, pod *corev1.Pod) SidecarEnv {
	t.Helper()
	for _, c := range pod.Spec.InitContainers {
		if c.Name == SidecarName {
			return ParseSidecarEnv(lookupIn(c.Env))
		}
	}
	t.Fatalf("no %s container", SidecarName)
	return SidecarEnv{}
}

// TestSchedulingDigestRecorded: the sidecar's env holds the digest of the
// sparklet.io/scheduling the webhook left on the pod, for drivers with and
// without a batch scheduler, so the sidecar can tell an edit, a removal or
// an addition after admission.
func TestSchedulingDigestRecorded(t *testing.T) {
	none := SchedulingDigest(&corev1.Pod{})
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		policy string
	}{
		"kueue":    {driverPod(annotated(vocab.AnnotationBatchScheduler, "kueue", vocab.AnnotationQueue, "lq")), ""},
		"yunikorn": {driverPod(), "scheduling: {batchScheduler: yunikorn}\n"},
		"none":     {driverPod(), ""},
	} {
		pod := injectOK(t, tc.pod, tc.policy)
		got := sidecarEnv(t, pod).SchedulingSHA256
		_, scheduled := pod.Annotations[vocab.AnnotationScheduling]
		if got != SchedulingDigest(pod) || scheduled != (got != none) || scheduled != (name != "none") {
			t.Errorf("%s: %s = %q, want %q (annotation present: %v)", name, vocab.EnvSchedulingSHA256, got, SchedulingDigest(pod), scheduled)
		}
		edited := pod.DeepCopy()
		edited.Annotations[vocab.AnnotationScheduling] = `{"scheduler":"kueue","queue":"someone-elses"}`
		if SchedulingDigest(edited) == got {
			t.Errorf("%s: an edited annotation has the admitted digest", name)
		}
	}
}

// TestSchedulingAnnotationOnlySparkletWrites: a pod that comes with its own
// sparklet.io/scheduling gets the one sparklet decides, or none without a
// batch scheduler, and a warning; the sidecar would otherwise stamp
// executors with a scheduler and queue no policy checked.
func TestSchedulingAnnotationOnlySparkletWrites(t *testing.T) {
	own := `{"scheduler":"kueue","queue":"someone-elses"}`
	for name, policyText := range map[string]string{"none": "", "kueue": "scheduling: {batchScheduler: kueue, queue: lq}\n"} {
		pod := driverPod(annotated(vocab.AnnotationScheduling, own))
		res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: mustPolicy(t, policyText), Version: "test", AppID: "spark-test"})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := pod.Annotations[vocab.AnnotationScheduling]
		if ok == (name == "none") || strings.Contains(v, "someone-elses") {
			t.Errorf("%s: %s = %q (present %v), want sparklet's own", name, vocab.AnnotationScheduling, v, ok)
		}
		if !strings.Contains(strings.Join(res.Warnings, "\n"), "sparklet replaced annotation "+vocab.AnnotationScheduling) {
			t.Errorf("%s: no warning about the pod's own %s: %q", name, vocab.AnnotationScheduling, res.Warnings)
		}
		if got := sidecarEnv(t, pod).SchedulingSHA256; got != SchedulingDigest(pod) {
			t.Errorf("%s: %s = %q, want the digest of what sparklet wrote", name, vocab.EnvSchedulingSHA256, got)
		}
	}
}
