package patches

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// SidecarEnv is what the webhook tells the sidecar through its env, whose
// names (vocab.EnvPodName ... vocab.EnvSchedulingSHA256) are in
// vocab/names.go. addSidecar writes it, and recordSchedulingDigest its
// SchedulingSHA256; `sparklet sidecar` reads it with ParseSidecarEnv.
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
	// SchedulingSHA256 is SchedulingDigest of the pod as the webhook
	// left it: the sidecar stamps executors with the batch scheduling
	// that annotation records, and refuses to start if it no longer
	// matches. Empty (pods injected before it) skips that check.
	SchedulingSHA256 string
	// AppPerJVM is set when every JVM of the Spark container is an
	// application of its own (docs/connect.md); rendered only when set.
	AppPerJVM bool
	// ConnectListen and ConnectBackend are set for a Spark Connect server
	// whose clients the sidecar admits (docs/connect.md): where it serves
	// them, and the JVM's port on 127.0.0.1; rendered only when set.
	ConnectListen  string
	ConnectBackend string
	// ConnectNoToken is set when the JVM's Connect port checks no token
	// (Spark 3.5): the sidecar then writes none and forwards admitted
	// clients without one; rendered only when set.
	ConnectNoToken bool
	// ConnectTLSDir holds tls.crt and tls.key, from the policy's
	// connect.tlsSecretName: the sidecar then serves Connect clients over
	// TLS only; rendered only when set.
	ConnectTLSDir string
	// EventLogDir is where the JVM writes the event logs the sidecar
	// ships to the policy's history store; rendered only when set.
	EventLogDir string
}

// EnvVars renders the env for the sidecar container.
func (e SidecarEnv) EnvVars() []corev1.EnvVar {
	env := []corev1.EnvVar{
		valueOrField(vocab.EnvPodName, e.PodName, "metadata.name"),
		valueOrField(vocab.EnvPodNamespace, e.Namespace, "metadata.namespace"),
		{Name: vocab.EnvListen, Value: e.Listen},
		{Name: vocab.EnvMetricsListen, Value: e.MetricsListen},
		{Name: vocab.EnvTokenFile, Value: e.TokenFile},
		{Name: vocab.EnvSparkContainer, Value: e.SparkContainer},
		{Name: vocab.EnvPolicy, Value: e.PolicyJSON},
		{Name: vocab.EnvConfSHA256, Value: e.ConfSHA256},
		{Name: vocab.EnvSchedulingSHA256, Value: e.SchedulingSHA256},
	}
	if e.AppPerJVM {
		env = append(env, corev1.EnvVar{Name: vocab.EnvAppPerJVM, Value: "true"})
	}
	if e.ConnectListen != "" {
		env = append(env, corev1.EnvVar{Name: vocab.EnvConnectListen, Value: e.ConnectListen},
			corev1.EnvVar{Name: vocab.EnvConnectBackend, Value: e.ConnectBackend})
	}
	if e.ConnectNoToken {
		env = append(env, corev1.EnvVar{Name: vocab.EnvConnectNoToken, Value: "true"})
	}
	if e.ConnectTLSDir != "" {
		env = append(env, corev1.EnvVar{Name: vocab.EnvConnectTLSDir, Value: e.ConnectTLSDir})
	}
	if e.EventLogDir != "" {
		env = append(env, corev1.EnvVar{Name: vocab.EnvEventLogDir, Value: e.EventLogDir})
	}
	return env
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
	defaults := policy.Sidecar{Port: policy.DefaultSidecarPort, MetricsPort: policy.DefaultSidecarMetricsPort}
	return SidecarEnv{
		PodName:          get(vocab.EnvPodName, ""),
		Namespace:        get(vocab.EnvPodNamespace, ""),
		Listen:           get(vocab.EnvListen, defaults.Listen()),
		MetricsListen:    get(vocab.EnvMetricsListen, defaults.MetricsListen()),
		TokenFile:        get(vocab.EnvTokenFile, TokenFile),
		SparkContainer:   get(vocab.EnvSparkContainer, ""),
		PolicyJSON:       get(vocab.EnvPolicy, ""),
		ConfSHA256:       get(vocab.EnvConfSHA256, ""),
		SchedulingSHA256: get(vocab.EnvSchedulingSHA256, ""),
		AppPerJVM:        get(vocab.EnvAppPerJVM, "") == "true",
		ConnectListen:    get(vocab.EnvConnectListen, ""),
		ConnectBackend:   get(vocab.EnvConnectBackend, ""),
		ConnectNoToken:   get(vocab.EnvConnectNoToken, "") == "true",
		ConnectTLSDir:    get(vocab.EnvConnectTLSDir, ""),
		EventLogDir:      get(vocab.EnvEventLogDir, ""),
	}
}

// SidecarPolicy decodes the effective policy the webhook gave the sidecar,
// or returns the built-in one of sparklet version for namespace when it gave
// none.
func SidecarPolicy(policyJSON, namespace, version string) (*policy.Effective, error) {
	if policyJSON == "" {
		return policy.Default(version).For(namespace), nil
	}
	var e policy.Effective
	if err := json.Unmarshal([]byte(policyJSON), &e); err != nil {
		return nil, fmt.Errorf("%s: %w", vocab.EnvPolicy, err)
	}
	return &e, nil
}
