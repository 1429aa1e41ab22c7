package patches

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// keyExecutorLogURL is Spark's template of executor log links
// (core/.../internal/config/UI.scala, 3.0 to 4.3.0). Spark fills its
// {{NAME}} from the executor's attributes, which CoarseGrainedExecutorBackend
// reads from the executor's SPARK_EXECUTOR_ATTRIBUTE_<NAME> env, and keeps
// the links in the event log, so the history server shows them too. The
// Kubernetes backend sets no attributes and no driver log links of its own
// (3.5.9 to 4.3.0).
const keyExecutorLogURL = "spark.ui.custom.executor.log.url"

// executorAttributeEnv is the env prefix of an executor attribute.
const executorAttributeEnv = "SPARK_EXECUTOR_ATTRIBUTE_"

// planLogURLs sets the policy's executor log URL unless the pod has its own.
func planLogURLs(_ *corev1.Pod, p *plan) error {
	if u := p.pol.ExecutorLogURL; u != "" {
		if _, ok := p.conf[keyExecutorLogURL]; !ok {
			p.conf[keyExecutorLogURL] = u
		}
	}
	return nil
}

// addLogAttributes gives an executor's Spark container the attributes
// policy.ExecutorLogPlaceholders name, when the policy has an executor log
// URL; an attribute the pod already sets is kept.
func addLogAttributes(c *corev1.Container, url string) {
	if url == "" {
		return
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	for _, e := range []corev1.EnvVar{
		{Name: executorAttributeEnv + "APP_ID", ValueFrom: field("metadata.labels['" + vocab.LabelAppID + "']")},
		{Name: executorAttributeEnv + "CONTAINER_NAME", Value: c.Name},
		{Name: executorAttributeEnv + "EXECUTOR_ID", ValueFrom: field("metadata.labels['" + vocab.LabelExecID + "']")},
		{Name: executorAttributeEnv + "NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: executorAttributeEnv + "NODE_NAME", ValueFrom: field("spec.nodeName")},
		{Name: executorAttributeEnv + "POD_NAME", ValueFrom: field("metadata.name")},
	} {
		c.Env = upsert(c.Env, e, envName, false)
	}
}
