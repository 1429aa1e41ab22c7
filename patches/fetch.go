package patches

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/vocab"
)

// planFetch reads the pod's remote dependencies, refuses what the fetch
// policy forbids, and adds where they land to the Spark configuration.
func planFetch(pod *corev1.Pod, p *plan) error {
	text, ok := pod.Annotations[vocab.AnnotationFetch]
	if !ok {
		return nil
	}
	entries, err := spec.ParseAnnotation(text)
	if err != nil {
		return &Refused{Reason: "bad-fetch", Message: err.Error()}
	}
	if err := p.pol.CheckFetch(entries); err != nil {
		return &Refused{Reason: "fetch-not-allowed", Message: err.Error()}
	}
	p.fetch = entries
	for k, v := range spec.SparkConf(entries) {
		if have := p.conf[k]; have != "" && !strings.Contains(have, v) {
			v = have + "," + v
		}
		p.conf[k] = v
	}
	return nil
}

// addInitContainer adds the init container that fetches the dependencies.
func addInitContainer(pod *corev1.Pod, p *plan, done *Status) error {
	if p.fetch == nil {
		return nil
	}
	pol, err := spec.Intersect(p.pol.Fetch...)
	if err != nil {
		return err
	}
	polJSON, err := spec.EncodePolicy(pol)
	if err != nil {
		return err
	}
	init := corev1.Container{
		Name:            InitName,
		Image:           p.pol.Sidecar.Image,
		ImagePullPolicy: p.pol.Sidecar.ImagePullPolicy,
		Args:            append([]string{"init"}, spec.InitArgs(PodInfoDir+"/"+FetchFile)...),
		Env:             []corev1.EnvVar{{Name: vocab.EnvFetchPolicy, Value: polJSON}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeConf, MountPath: PodInfoDir, ReadOnly: true},
			{Name: VolumeDeps, MountPath: spec.MountPath},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          RestrictedContext(),
	}
	// The sidecar's binary and image: its resources suit this too, and a
	// namespace's LimitRange or ResourceQuota that asks every container
	// for a limit or a request gets one (sidecar.resources).
	if r := p.pol.Sidecar.Resources; r != nil {
		init.Resources = *r.DeepCopy()
	}
	// Appended, not inserted, so the pod's own init containers keep their
	// positions and the patch leaves them untouched.
	pod.Spec.InitContainers = upsertAt(pod.Spec.InitContainers, init, len(pod.Spec.InitContainers))
	done.InitContainers = append(done.InitContainers, InitName)
	return nil
}
