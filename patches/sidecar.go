package patches

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// addSidecar injects the sidecar as a native sidecar: an init container
// with restartPolicy Always, so that a Job's pod completes when the driver
// exits. It has no startup probe: the kubelet probes no more often than
// once a second, and the init containers after a native sidecar wait for
// its startup probe to pass, so a probe would hold the JVM back by up to a
// second after the sidecar listens. The kubelet starts the conf init
// container, a native sidecar too, as soon as the sidecar runs instead,
// and that container's postStart hook returns only once the sidecar
// listens and the conf is written (waitForSidecar, confReadyHook), so the
// JVM still starts only once the sidecar answers it.
func addSidecar(pod *corev1.Pod, p *plan, done *Status) error {
	pol := p.in.PolicyJSON
	if pol == nil {
		var err error
		if pol, err = json.Marshal(p.pol); err != nil {
			return fmt.Errorf("encode policy for the sidecar: %w", err)
		}
	}
	env := SidecarEnv{
		Listen:         p.pol.Sidecar.Listen(),
		MetricsListen:  p.pol.Sidecar.MetricsListen(),
		TokenFile:      TokenFile,
		SparkContainer: p.container(pod).Name,
		PolicyJSON:     string(pol),
		ConfSHA256:     p.confDigest,
		AppPerJVM:      p.appPerJVM,
		ConnectListen:  p.connectListen(),
		ConnectBackend: p.connectBackend(),
		ConnectNoToken: p.connectAuth && !p.connectJVMToken,
		ConnectTLSDir:  p.connectTLSDir(),
		EventLogDir:    p.eventLogDir(),
	}.EnvVars()
	// The Go runtime collects harder as the heap nears the container's
	// memory limit, instead of running into it: the sidecar's memory grows
	// with the executors it caches.
	env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
		ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1")}}})
	always := corev1.ContainerRestartPolicyAlways
	metrics := intstr.FromInt32(p.pol.Sidecar.MetricsPort)
	sc := corev1.Container{
		Name:            SidecarName,
		Image:           p.pol.Sidecar.Image,
		ImagePullPolicy: p.pol.Sidecar.ImagePullPolicy,
		// By default the sidecar-only binary itself: the image's
		// entrypoint, /sparklet, would hand over to it, but only after its
		// own start, on the way to the JVM's (docs/performance.md).
		Command:       slices.Clone(p.pol.Sidecar.Command),
		Args:          []string{"sidecar"},
		RestartPolicy: &always,
		Env:           env,
		Ports:         []corev1.ContainerPort{{Name: "metrics", ContainerPort: p.pol.Sidecar.MetricsPort, Protocol: corev1.ProtocolTCP}},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: metrics}},
			PeriodSeconds: 10,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeJVM, MountPath: JVMDir},
			{Name: VolumeToken, MountPath: ServiceAccount, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          RestrictedContext(),
	}
	if r := p.pol.Sidecar.Resources; r != nil {
		sc.Resources = *r.DeepCopy()
	}
	pod.Spec.InitContainers = upsertAt(pod.Spec.InitContainers, sc, len(pod.Spec.InitContainers))
	done.InitContainers = append(done.InitContainers, SidecarName)
	return nil
}

// RestrictedContext is the security context of the containers sparklet
// injects. The group is set too: sparklet's image has no /etc/passwd, and
// for a runAsUser alone containerd then runs the process in group 0
// (oci.WithUserID, containerd v2.4).
func RestrictedContext() *corev1.SecurityContext {
	yes, no := true, false
	uid := sidecarUID
	return &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		RunAsUser:                &uid,
		RunAsGroup:               &uid,
		ReadOnlyRootFilesystem:   &yes,
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
