package patches

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// Stage-level scheduling (Spark 3.1+) gives a job's stages resource
// profiles of their own executor sizes. BasicExecutorFeatureStep (v3.5.x to
// v4.3.0) builds an executor of a profile from that profile's resources,
// not from spark.executor.*: SPARK_EXECUTOR_MEMORY is the profile's heap,
// SPARK_EXECUTOR_CORES its cores, and the pod carries the label
// spark-exec-resourceprofile-id (ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID
// is 0).

// defaultProfileID is the id of the profile spark.executor.* describes.
const defaultProfileID = "0"

// resourceProfileOf returns the id of the executor's resource profile when
// it is not the default one.
func resourceProfileOf(pod *corev1.Pod) (string, bool) {
	rp, ok := pod.Labels[vocab.LabelResourceProfileID]
	rp = strings.TrimSpace(rp)
	return rp, ok && rp != "" && rp != defaultProfileID
}

// profileMemory is the heap an executor of a non-default resource profile
// asks for, as spark.executor.memory: the enforced memory keys that are
// not the heap then size it from its own heap, not the default profile's.
func profileMemory(pod *corev1.Pod, c *corev1.Container) map[string]string {
	if _, ok := resourceProfileOf(pod); !ok {
		return nil
	}
	i := envIndex(c.Env, "SPARK_EXECUTOR_MEMORY")
	if i < 0 || c.Env[i].ValueFrom != nil || strings.TrimSpace(c.Env[i].Value) == "" {
		return nil
	}
	return map[string]string{keyExecutorMemory: c.Env[i].Value}
}

// announcedCores is the executor's SPARK_EXECUTOR_CORES (the entrypoint's
// --cores), when it is a positive number.
func announcedCores(c *corev1.Container) (int, bool) {
	i := envIndex(c.Env, "SPARK_EXECUTOR_CORES")
	if i < 0 || c.Env[i].ValueFrom != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.Env[i].Value))
	return n, err == nil && n >= 1
}

// refuseProfileCores refuses an executor of a non-default resource profile
// that announces more cores than the enforced spark.executor.cores.
// Lowering them, as the default profile's are lowered, could leave the
// profile's tasks, which may each need as many CPUs as the profile has
// cores (TaskResourceRequests.cpus), no executor that fits them, and the
// stage waiting forever.
func refuseProfileCores(pod *corev1.Pod, c *corev1.Container, enforced string) error {
	rp, ok := resourceProfileOf(pod)
	have, ok2 := announcedCores(c)
	limit, err := strconv.Atoi(strings.TrimSpace(enforced))
	if !ok || !ok2 || err != nil || have <= limit {
		return nil
	}
	return &Refused{Reason: "over-enforced-cores", Field: "env.SPARK_EXECUTOR_CORES", Message: fmt.Sprintf(
		"executor %q of resource profile %s asks for %d cores, more than the enforced %s=%s, which every executor's "+
			"task slots are held to; ask for at most %s cores in the resource profile (ExecutorResourceRequests.cores)",
		pod.Name, rp, have, keyExecutorCores, enforced, enforced)}
}
