package sidecar

import (
	"errors"
	"fmt"
	"time"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

// Config is the sidecar's whole configuration. The webhook sets the fields
// up to ConfSHA256 through the sidecar container's env, a policy.SidecarEnv
// (see docs/sidecar.md).
type Config struct {
	PodName        string // policy.EnvPodName
	Namespace      string // policy.EnvPodNamespace
	Listen         string // policy.EnvListen: the JVM's API, on 127.0.0.1
	MetricsListen  string // policy.EnvMetricsListen: /metrics, /readyz, /healthz
	TokenFile      string // policy.EnvTokenFile: the JVM's per-pod token
	SparkContainer string // policy.EnvSparkContainer: watched for termination
	PolicyJSON     string // policy.EnvPolicy: the effective policy, JSON
	ConfSHA256     string // policy.EnvConfSHA256: digest of the effective conf the webhook wrote
	Kubeconfig     string // --kubeconfig; empty means in-cluster
	// CleanupTimeout bounds the deletes after the driver ends.
	CleanupTimeout time.Duration
	// Profiling serves /debug/pprof/ next to /metrics (--profiling).
	Profiling bool
}

// Validate names the setting at fault.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{policy.EnvPodName + " (--pod-name)", c.PodName},
		{policy.EnvPodNamespace + " (--namespace)", c.Namespace},
		{policy.EnvListen + " (--listen)", c.Listen},
		{policy.EnvMetricsListen + " (--metrics-listen)", c.MetricsListen},
		{policy.EnvTokenFile + " (--token-file)", c.TokenFile},
		{policy.EnvSparkContainer + " (--spark-container)", c.SparkContainer},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required; the webhook sets it in the injected sidecar", f.name))
		}
	}
	if c.CleanupTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cleanup-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Policy decodes the effective policy the webhook recorded, or returns the
// built-in one for the namespace when none was recorded.
func (c *Config) Policy() (*policy.Effective, error) {
	return policy.SidecarPolicy(c.PolicyJSON, c.Namespace, version.Version)
}
