package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// warnNonRootByName warns when the Spark container, with the driver
// policy's security contexts applied, must run as non-root but names no
// uid. The kubelet then checks the image's USER, and refuses one given by
// name, as the apache/spark images' `USER spark` is: "container has
// runAsNonRoot and image has non-numeric user (spark), cannot verify user
// is non-root" (kubernetes pkg/kubelet/kuberuntime/security_context_others.go,
// verifyRunAsNonRoot, v1.37), and the pod stays in
// CreateContainerConfigError. Pod Security restricted asks for
// runAsNonRoot, so this is how a driver written for it usually fails. The
// conf init container runs with the Spark container's context and fails
// the same way first.
func warnNonRootByName(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	d, e := p.pol.Driver.Defaults, p.pol.Driver.Enforced
	podCtx := effectiveContext(pod.Spec.SecurityContext, d.SecurityContext, e.SecurityContext)
	cCtx := effectiveContext(c.SecurityContext, d.ContainerSecurityContext, e.ContainerSecurityContext)
	var nonRoot *bool
	var uid *int64
	if podCtx != nil {
		nonRoot, uid = podCtx.RunAsNonRoot, podCtx.RunAsUser
	}
	if cCtx != nil {
		if cCtx.RunAsNonRoot != nil {
			nonRoot = cCtx.RunAsNonRoot
		}
		if cCtx.RunAsUser != nil {
			uid = cCtx.RunAsUser
		}
	}
	if nonRoot != nil && *nonRoot && uid == nil {
		p.warn(fmt.Sprintf("container %q must run as non-root (runAsNonRoot: true) but no runAsUser is set: the kubelet refuses "+
			"an image whose USER is a name, as apache/spark's \"USER spark\" is (\"image has non-numeric user\"); "+
			"set securityContext.runAsUser: 185 for the apache/spark images, or your image's numeric uid", c.Name))
	}
	return nil
}

// effectiveContext is the security context applySettings gives a pod or
// container that has own: the enforced one, else own with the default's
// fields where own leaves them unset.
func effectiveContext[T corev1.SecurityContext | corev1.PodSecurityContext](own, def, enforced *T) *T {
	switch {
	case enforced != nil:
		return enforced
	case own == nil || def == nil:
		return firstNonNil(own, def)
	}
	merged := *own
	fillUnset(&merged, def)
	return &merged
}

func firstNonNil[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
