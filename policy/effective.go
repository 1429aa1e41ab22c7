package policy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/fetch/spec"
)

// Effective is the policy as it applies to one namespace: cluster defaults,
// overridden by the namespace's section, then the cluster's enforced values.
// It is what patches apply, and it travels to the sidecar as JSON.
type Effective struct {
	Namespace string    `json:"namespace"`
	Spark     SparkConf `json:"spark"`
	Driver    PodRules  `json:"driver"`
	Executor  PodRules  `json:"executor"`
	// Credentials are the cluster's credentials plus the namespace's.
	Credentials []Credential `json:"credentials,omitempty"`
	// Limits are the stricter of the cluster's and the namespace's.
	Limits Limits `json:"limits"`
	// AllowedImages holds the cluster list and, when set, the namespace
	// list; an image must match a pattern of every list.
	AllowedImages [][]string `json:"allowedImages,omitempty"`
	Sidecar       Sidecar    `json:"sidecar"`
	LocalDirs     LocalDirs  `json:"localDirs"`
	// HadoopConfigMap is mounted as HADOOP_CONF_DIR when set.
	HadoopConfigMap string `json:"hadoopConfigMap,omitempty"`
	// Fetch holds the cluster fetch policy and, when set, the namespace's;
	// an entry must pass every one.
	Fetch []spec.Policy `json:"fetch,omitempty"`
	// TokenContainers keep the pod's service-account token.
	TokenContainers []string `json:"tokenContainers,omitempty"`
	// APIServerAudiences are the policy's apiServerAudiences. Only the
	// webhook reads them, so they stay out of the sidecar's copy.
	APIServerAudiences []string `json:"-"`
	// SparkMetrics is metrics.spark, the namespace's if set: Spark's
	// PrometheusServlet is on (SparkMetricsConf is then under the Spark
	// defaults) and the Spark container's UI port is named spark-ui.
	SparkMetrics bool `json:"sparkMetrics,omitempty"`
	// UIService is ui.service, the namespace's if set: the sidecar creates
	// a Service for the Spark UI unless the pod declines.
	UIService bool `json:"uiService,omitempty"`
	// UIIngress is ui.ingress, the namespace's if set.
	UIIngress *UIIngress `json:"uiIngress,omitempty"`
	// Mesh is the cluster's mesh section.
	Mesh Mesh `json:"mesh,omitzero"`
	// Scheduling is the namespace's scheduling section if set, else the
	// cluster's.
	Scheduling Scheduling `json:"scheduling,omitzero"`
	// History is the namespace's history section if set, else the
	// cluster's; nil keeps no event logs.
	History *History `json:"history,omitempty"`
	// ExecutorLogURL is logs.executorURL, the namespace's if its section
	// is set.
	ExecutorLogURL string `json:"executorLogURL,omitempty"`
	// KeepFailedExecutorsSeconds is logs.keepFailedExecutorsSeconds, the
	// namespace's if its section is set.
	KeepFailedExecutorsSeconds int64 `json:"keepFailedExecutorsSeconds,omitempty"`
	// Connect is the cluster's connect section narrowed by the
	// namespace's; the webhook applies it to Spark Connect servers, and
	// the sidecar counts their sessions by it.
	Connect Connect `json:"connect,omitzero"`
}

// CredentialAudience tells whether a serviceAccountToken projection with
// this audience is a credential for the API server: no audience (the API
// server's own), or one of apiServerAudiences (by default
// DefaultAPIServerAudiences).
func (e *Effective) CredentialAudience(audience string) bool {
	accepted := e.APIServerAudiences
	if accepted == nil {
		accepted = DefaultAPIServerAudiences
	}
	return audience == "" || slices.Contains(accepted, audience)
}

// For returns the policy in effect for a namespace.
func (p *Policy) For(namespace string) *Effective {
	ns := p.Namespaces[namespace]
	e := &Effective{
		Namespace: namespace,
		Spark: SparkConf{
			Defaults: mergeMap(p.Spark.Defaults, ns.Spark.Defaults),
			Enforced: mergeMap(ns.Spark.Enforced, p.Spark.Enforced),
		},
		Driver: PodRules{
			Defaults: MergeSettings(p.Driver.Defaults, ns.Driver.Defaults),
			Enforced: MergeSettings(ns.Driver.Enforced, p.Driver.Enforced),
		},
		Executor: PodRules{
			Defaults: MergeSettings(p.Executor.Defaults, ns.Executor.Defaults),
			Enforced: MergeSettings(ns.Executor.Enforced, p.Executor.Enforced),
		},
		Credentials:        append(append([]Credential(nil), p.Credentials...), ns.Credentials...),
		Limits:             stricter(p.Limits, ns.Limits),
		Sidecar:            p.Sidecar,
		LocalDirs:          p.LocalDirs,
		HadoopConfigMap:    p.HadoopConfigMap,
		Fetch:              []spec.Policy{p.Fetch},
		TokenContainers:    p.TokenContainers,
		Mesh:               p.Mesh,
		APIServerAudiences: p.APIServerAudiences,
	}
	e.History = p.History
	if ns.History != nil {
		e.History = ns.History
	}
	logs := p.Logs
	if ns.Logs != nil {
		logs = *ns.Logs
	}
	e.ExecutorLogURL, e.KeepFailedExecutorsSeconds = logs.ExecutorURL, logs.KeepFailedExecutorsSeconds
	e.Connect = stricterConnect(p.Connect, ns.Connect)
	e.Scheduling = p.Scheduling
	if ns.Scheduling != nil {
		e.Scheduling = *ns.Scheduling
		e.Scheduling.Enforce = e.Scheduling.Enforce || p.Scheduling.Enforce
	}
	if len(p.AllowedImages) > 0 {
		e.AllowedImages = append(e.AllowedImages, p.AllowedImages)
	}
	if len(ns.AllowedImages) > 0 {
		e.AllowedImages = append(e.AllowedImages, ns.AllowedImages)
	}
	if ns.Fetch != nil {
		e.Fetch = append(e.Fetch, *ns.Fetch)
	}
	metrics := p.Metrics
	if ns.Metrics != nil && ns.Metrics.Spark != nil {
		metrics = *ns.Metrics
	}
	ui := p.UI
	if ns.UI != nil && ns.UI.Service != nil {
		ui = *ns.UI
	}
	e.UIService = ui.Service != nil && *ui.Service
	e.UIIngress = p.UI.Ingress
	if ns.UI != nil && ns.UI.Ingress != nil {
		e.UIIngress = ns.UI.Ingress
	}
	if metrics.Spark != nil && *metrics.Spark {
		e.SparkMetrics = true
		e.Spark.Defaults = mergeMap(SparkMetricsConf, e.Spark.Defaults)
	}
	return e
}

// SparkMetricsConf turns on Spark's PrometheusServlet: the driver's and
// executors' metrics in Prometheus format on the driver's UI port, at
// /metrics/prometheus/ and /metrics/executors/prometheus/ (Spark's
// docs/monitoring.md and conf/metrics.properties.template, 3.5 and 4.0;
// spark.ui.prometheus.enabled is already true by default from 4.0). These
// are defaults: the namespace's defaults and the pod may change them.
var SparkMetricsConf = map[string]string{
	"spark.ui.prometheus.enabled":                       "true",
	"spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
	"spark.metrics.conf.*.sink.prometheusServlet.path":  "/metrics/prometheus",
}

// CheckImage returns an error naming the patterns when image is not allowed.
func (e *Effective) CheckImage(image string) error {
	for _, patterns := range e.AllowedImages {
		ok, err := matchImage(patterns, image)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("image %q is not allowed by the sparklet policy; allowed patterns: %s", image, strings.Join(patterns, ", "))
		}
	}
	return nil
}

// CheckFetch applies every fetch policy in effect.
func (e *Effective) CheckFetch(entries []spec.Entry) error {
	for _, f := range e.Fetch {
		if err := f.Check(entries); err != nil {
			return err
		}
	}
	return nil
}

// CredentialsFor returns the credentials that go to "driver" or "executor".
func (e *Effective) CredentialsFor(role string) []Credential {
	var out []Credential
	for _, c := range e.Credentials {
		if len(c.To) == 0 {
			out = append(out, c)
			continue
		}
		for _, to := range c.To {
			if to == role {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// MergeSettings returns base overlaid by over: lists merge by name (over
// wins), maps by key, and set scalars replace.
func MergeSettings(base, over PodSettings) PodSettings {
	out := PodSettings{
		Env:                      mergeByKey(base.Env, over.Env, func(e corev1.EnvVar) string { return e.Name }),
		Volumes:                  mergeByKey(base.Volumes, over.Volumes, func(v corev1.Volume) string { return v.Name }),
		VolumeMounts:             mergeByKey(base.VolumeMounts, over.VolumeMounts, func(m corev1.VolumeMount) string { return m.MountPath }),
		Tolerations:              appendUnique(base.Tolerations, over.Tolerations),
		NodeSelector:             mergeMap(base.NodeSelector, over.NodeSelector),
		Labels:                   mergeMap(base.Labels, over.Labels),
		Annotations:              mergeMap(base.Annotations, over.Annotations),
		PriorityClassName:        pick(base.PriorityClassName, over.PriorityClassName),
		SchedulerName:            pick(base.SchedulerName, over.SchedulerName),
		ServiceAccountName:       pick(base.ServiceAccountName, over.ServiceAccountName),
		SecurityContext:          pickPtr(base.SecurityContext, over.SecurityContext),
		ContainerSecurityContext: pickPtr(base.ContainerSecurityContext, over.ContainerSecurityContext),
		ImagePullSecrets:         mergeByKey(base.ImagePullSecrets, over.ImagePullSecrets, func(r corev1.LocalObjectReference) string { return r.Name }),
		Resources:                pickPtr(base.Resources, over.Resources),
		AllowHostPath:            pickPtr(base.AllowHostPath, over.AllowHostPath),
	}
	return out
}

func mergeByKey[T any](base, over []T, key func(T) string) []T {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make([]T, 0, len(base)+len(over))
	index := map[string]int{}
	for _, list := range [][]T{base, over} {
		for _, item := range list {
			if i, ok := index[key(item)]; ok {
				out[i] = item
				continue
			}
			index[key(item)] = len(out)
			out = append(out, item)
		}
	}
	return out
}

func appendUnique[T any](base, over []T) []T {
	out := append([]T(nil), base...)
	for _, item := range over {
		dup := false
		for _, have := range out {
			if reflect.DeepEqual(have, item) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, item)
		}
	}
	return out
}

func mergeMap(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func pick(base, over string) string {
	if over != "" {
		return over
	}
	return base
}

func pickPtr[T any](base, over *T) *T {
	if over != nil {
		return over
	}
	return base
}

func stricter(cluster, ns Limits) Limits {
	out := cluster
	if ns.MaxExecutors > 0 && (out.MaxExecutors == 0 || ns.MaxExecutors < out.MaxExecutors) {
		out.MaxExecutors = ns.MaxExecutors
	}
	out.Driver.MaxCores = minQuantity(cluster.Driver.MaxCores, ns.Driver.MaxCores)
	out.Driver.MaxMemory = minQuantity(cluster.Driver.MaxMemory, ns.Driver.MaxMemory)
	out.Executor.MaxCores = minQuantity(cluster.Executor.MaxCores, ns.Executor.MaxCores)
	out.Executor.MaxMemory = minQuantity(cluster.Executor.MaxMemory, ns.Executor.MaxMemory)
	out.Executor.MaxPVCSize = minQuantity(cluster.Executor.MaxPVCSize, ns.Executor.MaxPVCSize)
	return out
}

func minQuantity(a, b *resource.Quantity) *resource.Quantity {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case b.Cmp(*a) < 0:
		return b
	}
	return a
}
