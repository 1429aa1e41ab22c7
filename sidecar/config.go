package sidecar

import (
	"errors"
	"fmt"
	"time"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// Config is the sidecar's whole configuration. The webhook sets the fields
// up to SchedulingSHA256 through the sidecar container's env, a
// patches.SidecarEnv (see docs/sidecar.md).
type Config struct {
	PodName          string // vocab.EnvPodName
	Namespace        string // vocab.EnvPodNamespace
	Listen           string // vocab.EnvListen: the JVM's API, on 127.0.0.1
	MetricsListen    string // vocab.EnvMetricsListen: /metrics, /readyz, /healthz
	TokenFile        string // vocab.EnvTokenFile: the JVM's per-pod token
	SparkContainer   string // vocab.EnvSparkContainer: watched for termination
	PolicyJSON       string // vocab.EnvPolicy: the effective policy, JSON
	ConfSHA256       string // vocab.EnvConfSHA256: digest of the effective conf the webhook wrote
	SchedulingSHA256 string // vocab.EnvSchedulingSHA256: digest of the sparklet.io/scheduling the webhook wrote
	AppPerJVM        bool   // vocab.EnvAppPerJVM: every JVM of the Spark container is an application of its own
	ConnectListen    string // vocab.EnvConnectListen: Spark Connect clients; "" serves none
	ConnectBackend   string // vocab.EnvConnectBackend: the JVM's Connect port on 127.0.0.1
	ConnectNoToken   bool   // vocab.EnvConnectNoToken: the JVM's Connect port checks no token (Spark 3.5)
	ConnectTLSDir    string // vocab.EnvConnectTLSDir: tls.crt and tls.key for Connect clients; "" serves cleartext
	EventLogDir      string // vocab.EnvEventLogDir: the JVM's event logs, which the sidecar ships; empty for none
	Kubeconfig       string // --kubeconfig; empty means in-cluster
	// CleanupTimeout bounds the deletes after the driver ends.
	CleanupTimeout time.Duration
	// Profiling serves /debug/pprof/ next to /metrics (--profiling).
	Profiling bool
}

// Validate names the setting at fault.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{vocab.EnvPodName + " (--pod-name)", c.PodName},
		{vocab.EnvPodNamespace + " (--namespace)", c.Namespace},
		{vocab.EnvListen + " (--listen)", c.Listen},
		{vocab.EnvMetricsListen + " (--metrics-listen)", c.MetricsListen},
		{vocab.EnvTokenFile + " (--token-file)", c.TokenFile},
		{vocab.EnvSparkContainer + " (--spark-container)", c.SparkContainer},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required; the webhook sets it in the injected sidecar", f.name))
		}
	}
	if c.ConnectListen != "" && c.ConnectBackend == "" {
		errs = append(errs, fmt.Errorf("%s (--connect-backend) is required with %s; the webhook sets both", vocab.EnvConnectBackend, vocab.EnvConnectListen))
	}
	if c.ConnectTLSDir != "" && c.ConnectListen == "" {
		errs = append(errs, fmt.Errorf("%s (--connect-tls-dir) applies only with %s; the webhook sets both", vocab.EnvConnectTLSDir, vocab.EnvConnectListen))
	}
	if c.CleanupTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cleanup-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Policy decodes the effective policy the webhook recorded, or returns the
// built-in one for the namespace when none was recorded.
func (c *Config) Policy() (*policy.Effective, error) {
	return patches.SidecarPolicy(c.PolicyJSON, c.Namespace, version.Version)
}
