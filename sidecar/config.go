// Package sidecar is the sparklet sidecar that runs inside a Spark driver
// pod: it serves the JVM the part of the Kubernetes API that Spark's
// scheduler backend uses, allocates executor pods under the executor
// policy, serves watches and polls from one informer, and deletes the
// application's executors, ConfigMaps and PVCs when the driver ends.
package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sparklet/sparklet/policy"
)

// Config is the sidecar's whole configuration. The webhook sets every
// field through the sidecar container's env (see docs/sidecar.md).
type Config struct {
	PodName        string // SPARKLET_POD_NAME
	Namespace      string // SPARKLET_POD_NAMESPACE
	Listen         string // SPARKLET_LISTEN: the JVM's API, on 127.0.0.1
	MetricsListen  string // SPARKLET_METRICS_LISTEN: /metrics, /readyz, /healthz
	TokenFile      string // SPARKLET_TOKEN_FILE: the JVM's per-pod token
	SparkContainer string // SPARKLET_SPARK_CONTAINER: watched for termination
	PolicyJSON     string // SPARKLET_POLICY: the effective policy, JSON
	ConfSHA256     string // SPARKLET_CONF_SHA256: digest of the effective conf the webhook wrote
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
		{"SPARKLET_POD_NAME (--pod-name)", c.PodName},
		{"SPARKLET_POD_NAMESPACE (--namespace)", c.Namespace},
		{"SPARKLET_LISTEN (--listen)", c.Listen},
		{"SPARKLET_METRICS_LISTEN (--metrics-listen)", c.MetricsListen},
		{"SPARKLET_TOKEN_FILE (--token-file)", c.TokenFile},
		{"SPARKLET_SPARK_CONTAINER (--spark-container)", c.SparkContainer},
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
	if c.PolicyJSON == "" {
		return policy.Default().For(c.Namespace), nil
	}
	var e policy.Effective
	if err := json.Unmarshal([]byte(c.PolicyJSON), &e); err != nil {
		return nil, fmt.Errorf("SPARKLET_POLICY: %w", err)
	}
	return &e, nil
}
