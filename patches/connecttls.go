package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Where the sidecar finds the certificate it serves Spark Connect clients
// with, when the policy's connect.tlsSecretName names one (docs/connect.md#tls).
const (
	VolumeConnectTLS = "sparklet-connect-tls"
	ConnectTLSDir    = "/var/run/secrets/sparklet-connect-tls"
)

// planConnectTLS takes the policy's TLS Secret for a Connect server,
// whose clients the sidecar admits. It runs after planConnectAuth.
func planConnectTLS(_ *corev1.Pod, p *plan) error {
	if p.connectAuth {
		p.connectTLS = p.pol.Connect.TLSSecretName
	}
	return nil
}

// connectTLSDir is the sidecar's ConnectTLSDir, or "".
func (p *plan) connectTLSDir() string {
	if p.connectTLS == "" {
		return ""
	}
	return ConnectTLSDir
}

// addConnectTLSVolume mounts the TLS Secret into the sidecar alone: the
// Spark container and the other init containers never see its key. A
// Secret that does not exist keeps the pod from starting, as any missing
// Secret volume does, and the kubelet says why in the pod's events. It
// runs after addSidecar.
func addConnectTLSVolume(pod *corev1.Pod, p *plan, done *Status) error {
	if p.connectTLS == "" {
		return nil
	}
	sc := sidecarContainer(pod)
	if sc == nil {
		return fmt.Errorf("no %s container to serve Spark Connect over TLS", SidecarName)
	}
	v := corev1.Volume{Name: VolumeConnectTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.connectTLS}}}
	pod.Spec.Volumes = upsert(pod.Spec.Volumes, v, volumeName, true)
	sc.VolumeMounts = upsert(sc.VolumeMounts, corev1.VolumeMount{Name: VolumeConnectTLS, MountPath: ConnectTLSDir, ReadOnly: true}, mountPath, true)
	done.Volumes = append(done.Volumes, VolumeConnectTLS)
	return nil
}

// sidecarContainer is the injected sidecar, or nil before addSidecar.
func sidecarContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == SidecarName {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
