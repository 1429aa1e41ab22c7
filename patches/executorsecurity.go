package patches

import (
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// inheritDriverSecurity gives an executor the security contexts of its
// driver, field by field, where neither Spark nor the executor policy's
// defaults set the field: the driver pod's securityContext to the pod,
// the driver's Spark container's to the executor's Spark container.
// Spark itself builds the executor container from the executor pod
// template and never copies the driver's context
// (BasicExecutorFeatureStep.scala, apache/spark v3.5 and v4.x: `new
// ContainerBuilder(pod.container)`, the template's container); from 4.3.0
// it sets allowPrivilegeEscalation (spark.kubernetes.securityContext.
// allowPrivilegeEscalation, default false) and nothing else. A
// client-mode driver in a namespace at Pod Security restricted would then
// ask for executors the API server refuses. The executors run the
// driver's code in the driver's image, so they get what the driver runs
// with. A privileged driver passes nothing on: executors are never
// privileged (checkExecutor).
func inheritDriverSecurity(pod *corev1.Pod, c *corev1.Container, d *DriverFacts) error {
	if d == nil || d.Pod == nil {
		return nil
	}
	driver := d.Pod
	if driver.Spec.SecurityContext != nil {
		if pod.Spec.SecurityContext == nil {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		fillUnset(pod.Spec.SecurityContext, driver.Spec.SecurityContext)
	}
	spark := d.Spark
	if spark == nil || spark.SecurityContext == nil {
		return nil
	}
	if p := spark.SecurityContext.Privileged; p != nil && *p && (c.SecurityContext == nil || c.SecurityContext.Privileged == nil) {
		return &Refused{Reason: "privileged", Message: fmt.Sprintf(
			"executor %q would inherit the security context of the driver's Spark container, which is privileged, "+
				"which the sparklet policy forbids for executors; give executors their own through the policy's "+
				"executor.defaults.containerSecurityContext", pod.Name)}
	}
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	fillUnset(c.SecurityContext, spark.SecurityContext)
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

// fillUnset sets each field of *dst that is unset (nil, or an empty
// list) to a copy of the same field of *src.
func fillUnset[T corev1.SecurityContext | corev1.PodSecurityContext](dst, src *T) {
	var from any
	switch src := any(src).(type) {
	case *corev1.SecurityContext:
		from = src.DeepCopy()
	case *corev1.PodSecurityContext:
		from = src.DeepCopy()
	}
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(from).Elem()
	for i := range d.NumField() {
		if f := d.Field(i); f.IsZero() {
			f.Set(s.Field(i))
		}
	}
}
