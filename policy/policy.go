package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/fetch/spec"
)

// Policy is the whole policy document.
type Policy struct {
	// Spark holds Spark configuration for every driver (and so its executors).
	Spark SparkConf `json:"spark,omitempty"`
	// Driver and Executor hold pod settings for driver and executor pods.
	Driver   PodRules `json:"driver,omitempty"`
	Executor PodRules `json:"executor,omitempty"`
	// Namespaces overrides cluster defaults per namespace. Cluster enforced
	// values always win over a namespace section.
	Namespaces map[string]Namespace `json:"namespaces,omitempty"`
	// Credentials are Secrets exposed to drivers and executors.
	Credentials []Credential `json:"credentials,omitempty"`
	Limits      Limits       `json:"limits,omitempty"`
	// AllowedImages are path.Match patterns; when set, every driver and
	// executor image must match one of them.
	AllowedImages []string `json:"allowedImages,omitempty"`
	// Sidecar configures the injected sparklet sidecar.
	Sidecar Sidecar `json:"sidecar,omitempty"`
	// LocalDirs configures the spark-local-dir-* emptyDirs.
	LocalDirs LocalDirs `json:"localDirs,omitempty"`
	// HadoopConfigMap names a ConfigMap in the pod's namespace mounted as
	// HADOOP_CONF_DIR.
	HadoopConfigMap string `json:"hadoopConfigMap,omitempty"`
	// Fetch restricts the remote dependencies a pod may ask for.
	Fetch spec.Policy `json:"fetch,omitempty"`
	// TokenContainers names the containers of a driver pod (init or
	// regular) that keep the pod's service-account token, such as Argo
	// Workflows' init and wait. Every other container loses it, and the
	// Spark container never has it.
	TokenContainers []string `json:"tokenContainers,omitempty"`
	// APIServerAudiences are the token audiences the API server accepts
	// (its --api-audiences). A serviceAccountToken projection with one of
	// them, or with none, is a Kubernetes credential; one with another
	// audience (Istio's istio-ca, EKS's sts.amazonaws.com, Vault's) is not.
	// Unset, DefaultAPIServerAudiences.
	APIServerAudiences []string `json:"apiServerAudiences,omitempty"`
	// Metrics asks for Spark's own metrics in Prometheus format.
	Metrics Metrics `json:"metrics,omitempty"`
	// UI asks for a Service in front of every driver's Spark UI.
	UI UI `json:"ui,omitempty"`
	// Mesh configures what a service mesh's proxy leaves alone.
	Mesh Mesh `json:"mesh,omitempty"`
	// Scheduling selects a batch scheduler (docs/scheduling.md).
	Scheduling Scheduling `json:"scheduling,omitempty"`
	// History keeps drivers' event logs in a store (docs/event-logs.md).
	History *History `json:"history,omitempty"`
	// Logs links the Spark UI to the platform's log system.
	Logs Logs `json:"logs,omitempty"`
	// Connect holds the limits and Spark defaults of Spark Connect
	// servers (policy/connectlimits.go).
	Connect Connect `json:"connect,omitempty"`
}

// UI configures how drivers' Spark UIs are exposed.
type UI struct {
	// Service makes the sidecar create a Service for the driver's UI port,
	// owned by the driver pod; a pod's sparklet.io/ui annotation overrides it.
	Service *bool `json:"service,omitempty"`
	// Ingress, when set, makes the sidecar also create an Ingress for that
	// Service, owned by the driver pod.
	Ingress *UIIngress `json:"ingress,omitempty"`
}

// UIIngress is the template of the Spark UI's Ingress. In Host, {{name}},
// {{namespace}} and {{app}} stand for the driver pod's name, its namespace
// and the application id.
type UIIngress struct {
	Host             string            `json:"host"`
	IngressClassName string            `json:"ingressClassName,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
	// TLSSecretName, when set, serves the host over TLS with that Secret
	// of the driver's namespace.
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}

// Metrics configures what drivers expose to Prometheus.
type Metrics struct {
	// Spark turns on Spark's PrometheusServlet on the driver's UI port
	// (SparkMetricsConf) and names that port spark-ui for the chart's
	// PodMonitor.
	Spark *bool `json:"spark,omitempty"`
}

// SparkConf holds Spark properties. Defaults yield to the namespace and the
// pod; Enforced values win over everything, and a pod that contradicts one
// is refused.
type SparkConf struct {
	Defaults map[string]string `json:"defaults,omitempty"`
	Enforced map[string]string `json:"enforced,omitempty"`
}

// PodRules holds the defaults and enforced values for one kind of pod.
type PodRules struct {
	Defaults PodSettings `json:"defaults,omitempty"`
	Enforced PodSettings `json:"enforced,omitempty"`
}

// PodSettings are the pod fields the policy can set. Env, volumes and
// mounts apply to the Spark container and are matched by name.
type PodSettings struct {
	Env                      []corev1.EnvVar               `json:"env,omitempty"`
	Volumes                  []corev1.Volume               `json:"volumes,omitempty"`
	VolumeMounts             []corev1.VolumeMount          `json:"volumeMounts,omitempty"`
	Tolerations              []corev1.Toleration           `json:"tolerations,omitempty"`
	NodeSelector             map[string]string             `json:"nodeSelector,omitempty"`
	Labels                   map[string]string             `json:"labels,omitempty"`
	Annotations              map[string]string             `json:"annotations,omitempty"`
	PriorityClassName        string                        `json:"priorityClassName,omitempty"`
	SchedulerName            string                        `json:"schedulerName,omitempty"`
	ServiceAccountName       string                        `json:"serviceAccountName,omitempty"`
	SecurityContext          *corev1.PodSecurityContext    `json:"securityContext,omitempty"`
	ContainerSecurityContext *corev1.SecurityContext       `json:"containerSecurityContext,omitempty"`
	ImagePullSecrets         []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	Resources                *corev1.ResourceRequirements  `json:"resources,omitempty"`
	// AllowHostPath lets executor pods carry hostPath volumes (executor
	// rules only; the sidecar refuses them otherwise).
	AllowHostPath *bool `json:"allowHostPath,omitempty"`
}

// Namespace is one namespace's section of the policy.
type Namespace struct {
	Spark       SparkConf    `json:"spark,omitempty"`
	Driver      PodRules     `json:"driver,omitempty"`
	Executor    PodRules     `json:"executor,omitempty"`
	Credentials []Credential `json:"credentials,omitempty"`
	Limits      Limits       `json:"limits,omitempty"`
	Fetch       *spec.Policy `json:"fetch,omitempty"`
	// AllowedImages narrows the cluster list: an image must match both.
	AllowedImages []string `json:"allowedImages,omitempty"`
	// Metrics overrides the cluster's metrics.spark when set.
	Metrics *Metrics `json:"metrics,omitempty"`
	// UI overrides the cluster's ui.service when set.
	UI *UI `json:"ui,omitempty"`
	// Scheduling replaces the cluster's scheduling section when set.
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	// History replaces the cluster's history section when set.
	History *History `json:"history,omitempty"`
	// Logs replaces the cluster's logs section when set.
	Logs *Logs `json:"logs,omitempty"`
	// Connect narrows the cluster's connect section (stricterConnect).
	Connect *Connect `json:"connect,omitempty"`
}

// Credential exposes keys of a Secret in the pod's namespace as env vars,
// as files, or both.
type Credential struct {
	// Name identifies the credential; it names the injected volume.
	Name       string          `json:"name"`
	SecretName string          `json:"secretName"`
	Env        []CredentialEnv `json:"env,omitempty"`
	// MountPath, when set, mounts the whole Secret read-only there.
	MountPath string `json:"mountPath,omitempty"`
	// To lists "driver" and/or "executor"; empty means both.
	To []string `json:"to,omitempty"`
}

// CredentialEnv maps one Secret key to one env var.
type CredentialEnv struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Limits caps what one application may ask for. Zero means no limit.
type Limits struct {
	MaxExecutors int           `json:"maxExecutors,omitempty"`
	Driver       ResourceLimit `json:"driver,omitempty"`
	Executor     ResourceLimit `json:"executor,omitempty"`
}

// ResourceLimit caps one pod's Spark container.
type ResourceLimit struct {
	MaxCores  *resource.Quantity `json:"maxCores,omitempty"`
	MaxMemory *resource.Quantity `json:"maxMemory,omitempty"`
	// MaxPVCSize (executors only) caps the storage an application's own
	// PVC may be grown to (Spark 4.2+'s ExecutorPVCResizePlugin); unset,
	// the sidecar grows none.
	MaxPVCSize *resource.Quantity `json:"maxPVCSize,omitempty"`
}

// Sidecar configures the injected sidecar container.
type Sidecar struct {
	Image string `json:"image,omitempty"`
	// Command is the sidecar's executable in Image, with args [sidecar].
	Command         []string                     `json:"command,omitempty"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
	Port            int32                        `json:"port,omitempty"`
	MetricsPort     int32                        `json:"metricsPort,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ConfResources are those of the conf container (sparklet-spark-conf),
	// which runs the Spark image beside the sidecar for the pod's life.
	ConfResources *corev1.ResourceRequirements `json:"confResources,omitempty"`
	// CreateQPS and CreateConcurrency bound executor creation.
	CreateQPS         float64 `json:"createQPS,omitempty"`
	CreateConcurrency int     `json:"createConcurrency,omitempty"`
	// TokenExpirationSeconds is the projected service-account token's lifetime.
	TokenExpirationSeconds int64 `json:"tokenExpirationSeconds,omitempty"`
	// ExecutorScheduleDeadlineSeconds is how long an application's first
	// executors may wait for a node before the sidecar warns, and an
	// application that fails or is killed with none ever scheduled ends
	// as ExecutorsNeverScheduled.
	ExecutorScheduleDeadlineSeconds int64 `json:"executorScheduleDeadlineSeconds,omitempty"`
	// ConnectAccess is what Spark Connect clients must be allowed
	// (policy/connect.go).
	ConnectAccess *ConnectAccess `json:"connectAccess,omitempty"`
}

// LocalDirs configures Spark's scratch space.
type LocalDirs struct {
	Count     int                  `json:"count,omitempty"`
	SizeLimit *resource.Quantity   `json:"sizeLimit,omitempty"`
	Medium    corev1.StorageMedium `json:"medium,omitempty"`
}
