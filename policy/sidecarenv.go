package policy

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Names of the sidecar's env vars: the webhook sets them in the injected
// sidecar container and `sparklet sidecar` reads them.
const (
	EnvPodName        = "SPARKLET_POD_NAME"
	EnvPodNamespace   = "SPARKLET_POD_NAMESPACE"
	EnvListen         = "SPARKLET_LISTEN"
	EnvMetricsListen  = "SPARKLET_METRICS_LISTEN"
	EnvTokenFile      = "SPARKLET_TOKEN_FILE"
	EnvSparkContainer = "SPARKLET_SPARK_CONTAINER"
	EnvPolicy         = "SPARKLET_POLICY"
	EnvConfSHA256     = "SPARKLET_CONF_SHA256"
)

// JVMDir is the in-memory volume the sidecar and the Spark container share;
// the sidecar writes the JVM's per-pod token to JVMTokenFile in it.
const (
	JVMDir       = "/var/run/sparklet/jvm"
	JVMTokenFile = JVMDir + "/token"
)

// SidecarEnv is what the webhook tells the sidecar through its env.
type SidecarEnv struct {
	// PodName and Namespace are the driver pod's. Rendered empty, they come
	// from the pod's own metadata through the downward API.
	PodName   string
	Namespace string
	// Listen serves the JVM's API, on 127.0.0.1.
	Listen string
	// MetricsListen serves /metrics, /readyz and /healthz.
	MetricsListen string
	// TokenFile is where the sidecar writes the JVM's per-pod token.
	TokenFile string
	// SparkContainer is watched for termination.
	SparkContainer string
	// PolicyJSON is the effective policy of the pod's namespace.
	PolicyJSON string
	// ConfSHA256 is the digest of the effective conf the webhook wrote. The
	// JVM reads the conf from a pod annotation, which stays editable; the
	// sidecar refuses to start if it no longer matches.
	ConfSHA256 string
}

// Listen is the address of the JVM's API: loopback only.
func (s Sidecar) Listen() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// MetricsListen is the address of /metrics and the probes: every interface,
// for the kubelet and Prometheus.
func (s Sidecar) MetricsListen() string { return fmt.Sprintf(":%d", s.MetricsPort) }

// EnvVars renders the env for the sidecar container.
func (e SidecarEnv) EnvVars() []corev1.EnvVar {
	return []corev1.EnvVar{
		valueOrField(EnvPodName, e.PodName, "metadata.name"),
		valueOrField(EnvPodNamespace, e.Namespace, "metadata.namespace"),
		{Name: EnvListen, Value: e.Listen},
		{Name: EnvMetricsListen, Value: e.MetricsListen},
		{Name: EnvTokenFile, Value: e.TokenFile},
		{Name: EnvSparkContainer, Value: e.SparkContainer},
		{Name: EnvPolicy, Value: e.PolicyJSON},
		{Name: EnvConfSHA256, Value: e.ConfSHA256},
	}
}

func valueOrField(name, value, fieldPath string) corev1.EnvVar {
	if value != "" {
		return corev1.EnvVar{Name: name, Value: value}
	}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

// ParseSidecarEnv reads the sidecar's env through lookup (os.LookupEnv in
// the sidecar). An unset address or token file takes its default; a set
// one is kept, even when empty.
func ParseSidecarEnv(lookup func(string) (string, bool)) SidecarEnv {
	get := func(name, def string) string {
		if v, ok := lookup(name); ok {
			return v
		}
		return def
	}
	defaults := Sidecar{Port: DefaultSidecarPort, MetricsPort: DefaultSidecarMetricsPort}
	return SidecarEnv{
		PodName:        get(EnvPodName, ""),
		Namespace:      get(EnvPodNamespace, ""),
		Listen:         get(EnvListen, defaults.Listen()),
		MetricsListen:  get(EnvMetricsListen, defaults.MetricsListen()),
		TokenFile:      get(EnvTokenFile, JVMTokenFile),
		SparkContainer: get(EnvSparkContainer, ""),
		PolicyJSON:     get(EnvPolicy, ""),
		ConfSHA256:     get(EnvConfSHA256, ""),
	}
}

// SidecarPolicy decodes the effective policy the webhook gave the sidecar,
// or returns the built-in one of sparklet version for namespace when it gave
// none.
func SidecarPolicy(policyJSON, namespace, version string) (*Effective, error) {
	if policyJSON == "" {
		return Default(version).For(namespace), nil
	}
	var e Effective
	if err := json.Unmarshal([]byte(policyJSON), &e); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPolicy, err)
	}
	return &e, nil
}
