package patches

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A driver's JVM may set any Spark property in its own code
// (SparkSession.builder.config, SparkConf.set), after the webhook checked
// its configuration. The policy's enforced Spark keys that shape executor
// pods are therefore enforced again, by the sidecar, on every executor pod
// the JVM asks for, as BasicExecutorFeatureStep (v3.5.x, v4.x) would have
// built it from them. Keys that only the JVM reads (spark.eventLog.*,
// spark.sql.*, ...) stay defaults the application can override.

// executorPrefixKeys map a Spark key prefix to the pod field it fills.
var executorPrefixKeys = []struct {
	prefix string
	apply  func(pod *corev1.Pod, c *corev1.Container, name, value string)
}{
	{"spark.kubernetes.executor.label.", func(pod *corev1.Pod, _ *corev1.Container, k, v string) {
		pod.Labels = setKeys(pod.Labels, map[string]string{k: v}, true)
	}},
	{"spark.kubernetes.executor.annotation.", func(pod *corev1.Pod, _ *corev1.Container, k, v string) {
		pod.Annotations = setKeys(pod.Annotations, map[string]string{k: v}, true)
	}},
	{"spark.kubernetes.node.selector.", func(pod *corev1.Pod, _ *corev1.Container, k, v string) {
		pod.Spec.NodeSelector = setKeys(pod.Spec.NodeSelector, map[string]string{k: v}, true)
	}},
	{"spark.kubernetes.executor.node.selector.", func(pod *corev1.Pod, _ *corev1.Container, k, v string) {
		pod.Spec.NodeSelector = setKeys(pod.Spec.NodeSelector, map[string]string{k: v}, true)
	}},
	{"spark.executorEnv.", func(_ *corev1.Pod, c *corev1.Container, k, v string) {
		c.Env = upsert(c.Env, corev1.EnvVar{Name: k, Value: v}, envName, true)
	}},
}

// executorMemoryKeys are the keys ExecutorMemoryOf reads, with the older
// keys Spark reads in their place.
var executorMemoryKeys = func() []string {
	var keys []string
	for _, k := range executorKeys {
		if k.shapes == shapesMemory {
			keys = append(append(keys, k.key), k.alternates...)
		}
	}
	return keys
}()

// enforcedOnExecutors tells whether the sidecar enforces an enforced Spark
// key on executor pods.
func enforcedOnExecutors(key string) bool {
	for _, p := range executorPrefixKeys {
		if strings.HasPrefix(key, p.prefix) {
			return true
		}
	}
	switch key {
	case "spark.kubernetes.container.image", "spark.kubernetes.executor.container.image", "spark.kubernetes.container.image.pullPolicy",
		"spark.kubernetes.scheduler.name", "spark.kubernetes.executor.scheduler.name",
		"spark.kubernetes.authenticate.executor.serviceAccountName",
		"spark.executor.cores", "spark.kubernetes.executor.request.cores", "spark.kubernetes.executor.limit.cores":
		return true
	}
	return slices.Contains(executorMemoryKeys, key)
}

// enforceExecutorConf sets on an executor pod what the enforced Spark keys
// say of it. conf is the driver's effective configuration, which the
// memory arithmetic reads besides the enforced keys.
func enforceExecutorConf(pod *corev1.Pod, c *corev1.Container, enforced, conf map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(enforced)) {
		v := enforced[k]
		for _, p := range executorPrefixKeys {
			if name, ok := strings.CutPrefix(k, p.prefix); ok && name != "" {
				p.apply(pod, c, name, v)
			}
		}
	}
	if v, _, ok := sparkValue(enforced, keyExecutorImage, newestLine); ok {
		c.Image = v
	}
	if v, ok := enforced["spark.kubernetes.container.image.pullPolicy"]; ok {
		c.ImagePullPolicy = corev1.PullPolicy(v)
	}
	if v, ok := first(enforced, "spark.kubernetes.executor.scheduler.name", "spark.kubernetes.scheduler.name"); ok {
		pod.Spec.SchedulerName = v
	}
	if v, ok := enforced["spark.kubernetes.authenticate.executor.serviceAccountName"]; ok {
		pod.Spec.ServiceAccountName = v
	}
	if err := enforceExecutorCores(pod, c, enforced, conf); err != nil {
		return err
	}
	return enforceExecutorMemory(c, enforced, conf, profileMemory(pod, c), isSpark3Image(c.Image))
}

// enforceExecutorCores: SPARK_EXECUTOR_CORES and the CPU request come from
// spark.executor.cores, unless spark.kubernetes.executor.request.cores
// names the request; spark.kubernetes.executor.limit.cores is the limit.
// An executor that announces fewer cores than enforced keeps them
// (fewerCores); one of a non-default resource profile that announces more
// is refused (refuseProfileCores).
func enforceExecutorCores(pod *corev1.Pod, c *corev1.Container, enforced, conf map[string]string) error {
	cores, coresEnforced := enforced[keyExecutorCores]
	if coresEnforced {
		if err := refuseProfileCores(pod, c, cores); err != nil {
			return err
		}
	}
	if coresEnforced && !fewerCores(c, cores) {
		c.Env = upsert(c.Env, corev1.EnvVar{Name: "SPARK_EXECUTOR_CORES", Value: cores}, envName, true)
	}
	request, ok := enforced[keyRequestCores]
	if !ok && coresEnforced {
		if _, own := conf[keyRequestCores]; !own {
			request, ok = cores, true
		}
	}
	if ok {
		if err := setQuantity(&c.Resources.Requests, corev1.ResourceCPU, request, keyRequestCores); err != nil {
			return err
		}
	}
	if limit, ok := enforced[keyLimitCores]; ok {
		return setQuantity(&c.Resources.Limits, corev1.ResourceCPU, limit, keyLimitCores)
	}
	return nil
}

// fewerCores tells whether the executor announces fewer task slots
// (SPARK_EXECUTOR_CORES, the entrypoint's --cores) than the enforced
// spark.executor.cores. Spark 4.2+ does so in recovery mode: once an
// executor was lost to an OOM (a loss reason that says "OOM", as exit code
// 137's "SIGKILL, possible container OOM" does), the allocator sets
// spark.kubernetes.allocation.recoveryMode.enabled (unless the application
// set it false) and BasicExecutorFeatureStep gives every later executor
// SPARK_EXECUTOR_CORES = max(1, ceil(spark.task.cpus)) on the pod's
// unchanged CPU request, so that it runs one task at a time
// (KubernetesClusterSchedulerBackend.doRemoveExecutor,
// ExecutorPodsAllocator.setRecoveryMode, BasicExecutorFeatureStep; read in
// the 4.3.0 jar, config .version("4.2.0")). Raising it would undo that.
func fewerCores(c *corev1.Container, enforced string) bool {
	have, ok := announcedCores(c)
	limit, err := strconv.Atoi(strings.TrimSpace(enforced))
	return ok && err == nil && have < limit
}

// enforceExecutorMemory sizes the pod and the heap (SPARK_EXECUTOR_MEMORY,
// the entrypoint's -Xmx) as Spark would from the enforced memory keys, over
// the driver's configuration and what the executor asks for itself (own:
// profileMemory).
func enforceExecutorMemory(c *corev1.Container, enforced, conf, own map[string]string, spark3 bool) error {
	if !slices.ContainsFunc(executorMemoryKeys, func(k string) bool { _, ok := enforced[k]; return ok }) {
		return nil
	}
	merged := maps.Clone(conf)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, own)
	maps.Copy(merged, enforced)
	m, err := ExecutorMemoryOf(merged, spark3)
	if err != nil {
		return &Refused{Reason: "bad-spark-conf", Message: "the enforced executor memory: " + err.Error()}
	}
	total := fmt.Sprintf("%dMi", m.Total())
	for _, list := range []*corev1.ResourceList{&c.Resources.Requests, &c.Resources.Limits} {
		if err := setQuantity(list, corev1.ResourceMemory, total, "executor memory"); err != nil {
			return err
		}
	}
	c.Env = upsert(c.Env, corev1.EnvVar{Name: "SPARK_EXECUTOR_MEMORY", Value: fmt.Sprintf("%dm", m.Heap)}, envName, true)
	return nil
}

func setQuantity(list *corev1.ResourceList, name corev1.ResourceName, v, key string) error {
	q, err := resource.ParseQuantity(strings.TrimSpace(v))
	if err != nil {
		return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("the enforced %s=%q is not a quantity", key, v)}
	}
	if *list == nil {
		*list = corev1.ResourceList{}
	}
	(*list)[name] = q
	return nil
}

func first(m map[string]string, keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return "", false
}
