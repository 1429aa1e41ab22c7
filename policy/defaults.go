package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Built-in values used where the policy is silent.
const (
	DefaultSidecarPort        = 7443
	DefaultSidecarMetricsPort = 7444
	DefaultCreateQPS          = 50
	DefaultCreateConcurrency  = 16
	DefaultTokenExpiration    = 3600
	DefaultScheduleDeadline   = 600
	DefaultLocalDirs          = 1
)

// DefaultSidecarImage is the sidecar image of a sparklet version.
func DefaultSidecarImage(version string) string { return "ghcr.io/sparklet/sparklet:" + version }

// DefaultSidecarCommand is the sidecar-only build of sparklet in its
// image, next to the entrypoint /sparklet, which would hand over to it
// only after its own, larger start.
var DefaultSidecarCommand = []string{"/sparklet-sidecar"}

// DefaultDriverServiceAccount is the built-in policy's driver account,
// the one the chart creates (driver.serviceAccountName).
const DefaultDriverServiceAccount = "spark-driver"

// Default returns the built-in policy for a sparklet version: good enough
// to try sparklet out. Drivers run as DefaultDriverServiceAccount, so that
// their executors (the namespace's default) never share their account.
func Default(version string) *Policy {
	p, err := Parse(nil, version)
	if err != nil {
		panic("built-in policy is invalid: " + err.Error())
	}
	p.Driver.Defaults.ServiceAccountName = DefaultDriverServiceAccount
	return p
}

// DefaultAPIServerAudiences are the audiences kube-apiserver accepts when
// its --api-audiences is not set: its --service-account-issuer, which
// kubeadm sets to https://kubernetes.default.svc.<dnsDomain>
// (cmd/kubeadm/app/phases/controlplane/manifests.go, v1.33) and many
// clusters to https://kubernetes.default.svc. A projection with no
// audience gets the API server's own and is always a credential.
var DefaultAPIServerAudiences = []string{"https://kubernetes.default.svc", "https://kubernetes.default.svc.cluster.local"}

func (p *Policy) setDefaults(version string) {
	p.Sidecar.SetDefaults(version)

	if p.LocalDirs.Count == 0 {
		p.LocalDirs.Count = DefaultLocalDirs
	}
}

// SetDefaults fills in the built-in values where the sidecar settings are
// silent, as in an effective policy decoded from JSON; the image is that
// of sparklet version.
func (s *Sidecar) SetDefaults(version string) {
	if s.Image == "" {
		s.Image = DefaultSidecarImage(version)
	}
	if len(s.Command) == 0 {
		s.Command = slices.Clone(DefaultSidecarCommand)
	}
	if s.ImagePullPolicy == "" {
		s.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if s.Port == 0 {
		s.Port = DefaultSidecarPort
	}
	if s.MetricsPort == 0 {
		s.MetricsPort = DefaultSidecarMetricsPort
	}
	if s.CreateQPS == 0 {
		s.CreateQPS = DefaultCreateQPS
	}
	if s.CreateConcurrency == 0 {
		s.CreateConcurrency = DefaultCreateConcurrency
	}
	if s.TokenExpirationSeconds == 0 {
		s.TokenExpirationSeconds = DefaultTokenExpiration
	}
	if s.ExecutorScheduleDeadlineSeconds == 0 {
		s.ExecutorScheduleDeadlineSeconds = DefaultScheduleDeadline
	}
	if s.Resources == nil {
		s.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("50m"),
				// bench's sidecar section: 29 MiB peak with 100
				// executors, 36 MiB with 1000; idle, under 1m of CPU.
				corev1.ResourceMemory: resource.MustParse("48Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
		}
	}
	if s.ConfResources == nil {
		s.ConfResources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			// Its start (runc's init, the copy, the hook's exec) uses 35
			// to 45 ms of CPU in about 150 ms: at 100m, a 10 ms quota per
			// 100 ms period, the kernel throttled it in every start
			// measured, 12 to 47 ms, and its hook, which the Spark
			// container waits on, took longer (bench start and
			// hack/throttled.sh on the real node). 500m is a quota of
			// 50 ms, above what it uses.
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			},
		}
	}
}
