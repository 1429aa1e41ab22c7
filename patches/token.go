package patches

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// refuseTokens refuses a pod in which a container other than the sidecar
// holds or can reach a Kubernetes credential: a shared process namespace
// (the sidecar's files under /proc/<pid>/root), a serviceAccountToken
// projection whose audience the API server accepts (policy
// apiServerAudiences; Istio's istio-ca and EKS's sts.amazonaws.com tokens
// are not credentials for it), a Secret that looks like a service-account
// token, or anything mounted at the service-account path. The Spark container never may;
// the policy's tokenContainers may. The token volume the API server added
// (kube-api-access-*) is not refused: isolateServiceAccount takes it away.
func refuseTokens(pod *corev1.Pod, p *plan) error {
	if s := pod.Spec.ShareProcessNamespace; s != nil && *s {
		return &Refused{Reason: "service-account-token", Message: "spec.shareProcessNamespace: true is not allowed for Spark drivers: " +
			"every container could read the sidecar's service-account token through /proc; remove shareProcessNamespace"}
	}
	spark := p.container(pod).Name
	for _, name := range p.pol.TokenContainers {
		if name == spark {
			p.warn(fmt.Sprintf("the sparklet policy's tokenContainers names %q, the Spark container, which never gets "+
				"the pod's service-account token", name))
		}
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	tokenSecret := tokenSecretPattern(pod, p)
	for i, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			// The sidecar is an init container; a regular container of its
			// name is the user's.
			if (i == 0 && c.Name == SidecarName) || (c.Name != spark && slices.Contains(p.pol.TokenContainers, c.Name)) {
				continue
			}
			fix := "only the sparklet sidecar may hold a Kubernetes credential, and the Spark container never does; remove it"
			if c.Name != spark {
				fix = "only the sparklet sidecar and the policy's tokenContainers may hold the pod's service-account token; " +
					"remove it, or ask your platform team to list the container in tokenContainers"
			}
			for _, m := range c.VolumeMounts {
				// The sidecar's token volume does not exist before injection,
				// but a mount of it would be valid after.
				if m.Name == VolumeToken {
					return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
						"container %q mounts volume %q, the sparklet sidecar's token: %s", c.Name, m.Name, fix)}
				}
				v, ok := vols[m.Name]
				if ok && isAutoToken(v) {
					continue
				}
				if what := tokenSource(v, tokenSecret, p.pol.CredentialAudience); ok && what != "" {
					return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
						"container %q mounts volume %q (%s) at %s: %s", c.Name, m.Name, what, m.MountPath, fix)}
				}
				if underServiceAccountPath(m.MountPath) {
					return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
						"container %q mounts volume %q at %s, the service-account token's path: %s", c.Name, m.Name, m.MountPath, fix)}
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && tokenSecret.MatchString(e.ValueFrom.SecretKeyRef.Name) {
					return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
						"container %q env %s reads Secret %q, a service-account token: %s", c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name, fix)}
				}
			}
			for _, from := range c.EnvFrom {
				if from.SecretRef != nil && tokenSecret.MatchString(from.SecretRef.Name) {
					return &Refused{Reason: "service-account-token", Message: fmt.Sprintf(
						"container %q envFrom reads Secret %q, a service-account token: %s", c.Name, from.SecretRef.Name, fix)}
				}
			}
		}
	}
	return nil
}

// tokenSource says how a volume carries a Kubernetes credential, or "".
// A projection is one when credential accepts its audience.
func tokenSource(v corev1.Volume, tokenSecret tokenSecrets, credential func(audience string) bool) string {
	if s := v.Secret; s != nil && tokenSecret.MatchString(s.SecretName) {
		return fmt.Sprintf("Secret %q, a service-account token", s.SecretName)
	}
	if v.Projected == nil {
		return ""
	}
	for _, src := range v.Projected.Sources {
		if t := src.ServiceAccountToken; t != nil && credential(t.Audience) {
			if t.Audience == "" {
				return "a serviceAccountToken projection"
			}
			return fmt.Sprintf("a serviceAccountToken projection for audience %q, which the API server accepts", t.Audience)
		}
		if s := src.Secret; s != nil && tokenSecret.MatchString(s.Name) {
			return fmt.Sprintf("Secret %q, a service-account token", s.Name)
		}
	}
	return ""
}

// tokenSecretPattern matches the names of the long-lived token Secrets of
// the service accounts the driver may run as: <account>-token and
// <account>-token-<suffix>, as the token controller named them before
// Kubernetes 1.24. The webhook cannot read a Secret's type; the chart's
// ValidatingAdmissionPolicy refuses such Secrets for the driver accounts.
// It is matched by hand: compiling a regular expression of the accounts
// took 3% of the webhook's CPU.
func tokenSecretPattern(pod *corev1.Pod, p *plan) tokenSecrets {
	accounts := tokenSecrets{"default"}
	for _, sa := range []string{pod.Spec.ServiceAccountName, p.pol.Driver.Defaults.ServiceAccountName, p.pol.Driver.Enforced.ServiceAccountName} {
		if sa != "" && !slices.Contains(accounts, sa) {
			accounts = append(accounts, sa)
		}
	}
	return accounts
}

// tokenSecrets are the service accounts whose token Secret names match.
type tokenSecrets []string

// MatchString tells whether name is <account>-token or
// <account>-token-<suffix of a-z and 0-9> for one of the accounts.
func (t tokenSecrets) MatchString(name string) bool {
	for _, account := range t {
		rest, ok := strings.CutPrefix(name, account+"-token")
		if !ok {
			continue
		}
		if rest == "" {
			return true
		}
		suffix, ok := strings.CutPrefix(rest, "-")
		if ok && suffix != "" && strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") == "" {
			return true
		}
	}
	return false
}

// underServiceAccountPath tells whether a mount lands at or under the path
// where Kubernetes clients look for the pod's token.
func underServiceAccountPath(mountPath string) bool {
	clean := path.Clean("/" + mountPath)
	return clean == ServiceAccount || strings.HasPrefix(clean, ServiceAccount+"/")
}
