package patches

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// inheritDriverSecurity gives an executor the security contexts of its
// driver where neither Spark nor the executor policy's defaults gave it
// one: the driver pod's securityContext to the pod, the driver's Spark
// container's to the executor's Spark container. Spark itself builds the
// executor container from the executor pod template alone and never
// copies the driver's context (BasicExecutorFeatureStep.scala,
// apache/spark v3.5 and v4.x: `new ContainerBuilder(pod.container)`, the
// template's container); a client-mode driver in a namespace at Pod
// Security restricted would then ask for executors the API server
// refuses. The executors run the driver's code in the driver's image, so
// they get what the driver runs with. A privileged driver passes nothing
// on: executors are never privileged (checkExecutor).
func inheritDriverSecurity(pod *corev1.Pod, c *corev1.Container, driver *corev1.Pod) error {
	if driver == nil {
		return nil
	}
	if pod.Spec.SecurityContext == nil && driver.Spec.SecurityContext != nil {
		pod.Spec.SecurityContext = driver.Spec.SecurityContext.DeepCopy()
	}
	if c.SecurityContext != nil {
		return nil
	}
	spark := driverSparkContainer(driver)
	if spark == nil || spark.SecurityContext == nil {
		return nil
	}
	if p := spark.SecurityContext.Privileged; p != nil && *p {
		return &Refused{Reason: "privileged", Message: fmt.Sprintf(
			"executor %q has no securityContext and would inherit the driver's Spark container's, which is privileged, "+
				"which the sparklet policy forbids for executors; give executors their own through the policy's "+
				"executor.defaults.containerSecurityContext", pod.Name)}
	}
	c.SecurityContext = spark.SecurityContext.DeepCopy()
	return nil
}

// driverSparkContainer is the driver's Spark container, as its status
// annotation names it, else as the webhook finds it; nil when neither.
func driverSparkContainer(driver *corev1.Pod) *corev1.Container {
	var st Status
	name := ""
	if json.Unmarshal([]byte(driver.Annotations[vocab.AnnotationStatus]), &st) == nil {
		name = st.SparkContainer
	}
	for i := range driver.Spec.Containers {
		if driver.Spec.Containers[i].Name == name {
			return &driver.Spec.Containers[i]
		}
	}
	if i, err := findContainer(driver, sparkContainerNames); err == nil {
		return &driver.Spec.Containers[i]
	}
	return nil
}
