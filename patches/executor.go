package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// ExecutorInput is everything an executor pod is patched with besides the pod.
type ExecutorInput struct {
	Policy *policy.Effective
	// Driver is what the executor's driver pod says (ReadDriver);
	// executors get a controller owner reference to its Pod.
	Driver *DriverFacts
	// AppID is the application's spark-app-selector value.
	AppID string
}

// executorContainerNames mark the executor's Spark container
// (BasicExecutorFeatureStep names it spark-kubernetes-executor).
var executorContainerNames = []string{"spark-kubernetes-executor", "executor", "spark"}

// Executor validates an executor pod the JVM asked for and patches it in
// place with the executor policy. Its ExecutorResult says what the
// application's owner should be warned of. It returns a *Refused naming
// the rule the pod breaks.
func Executor(pod *corev1.Pod, in ExecutorInput) (ExecutorResult, error) {
	d := in.Driver
	if d == nil {
		d = &DriverFacts{}
	}
	if err := checkExecutor(pod, in); err != nil {
		return ExecutorResult{}, err
	}
	i, err := findContainer(pod, executorContainerNames)
	if err != nil {
		return ExecutorResult{}, err
	}
	c := &pod.Spec.Containers[i]
	pol := in.Policy
	applySettings(pod, c, pol.Executor.Defaults, false)
	if err := inheritDriverSecurity(pod, c, d); err != nil {
		return ExecutorResult{}, err
	}
	if err := enforceExecutorConf(pod, c, pol.Spark.Enforced, d.Conf); err != nil {
		return ExecutorResult{}, err
	}
	applySettings(pod, c, pol.Executor.Enforced, true)
	if err := refuseLentExecutorAccount(pod, d.Pod); err != nil {
		return ExecutorResult{}, err
	}
	if err := stampScheduling(pod, d); err != nil {
		return ExecutorResult{}, err
	}
	applyCredentials(pod, c, pol.CredentialsFor("executor"))
	addLogAttributes(c, pol.ExecutorLogURL)
	if err := checkContainerLimits(c, pol.Limits.Executor, "executor"); err != nil {
		r := err.(*Refused)
		return ExecutorResult{}, &Refused{Reason: r.Reason, Field: r.Field, Message: fmt.Sprintf("executor %q: %s", pod.Name, r.Message)}
	}
	off := false
	pod.Spec.AutomountServiceAccountToken = &off
	pod.Labels[vocab.LabelManaged] = "true"
	if d.Pod != nil {
		setController(pod, d.Pod)
	}
	var res ExecutorResult
	if msg := beyondGang(pod, d); msg != "" {
		res.Warnings = append(res.Warnings, ExecutorWarning{Reason: WarnExecutorLargerThanGang, Message: msg})
	}
	return res, nil
}

func checkExecutor(pod *corev1.Pod, in ExecutorInput) error {
	if pod.Labels[vocab.LabelRole] != "executor" {
		return &Refused{Reason: "not-executor", Message: fmt.Sprintf(
			"pod %q is not an executor: label %s must be \"executor\"", pod.Name, vocab.LabelRole)}
	}
	if got := pod.Labels[vocab.LabelAppID]; got != in.AppID {
		return &Refused{Reason: "other-app", Message: fmt.Sprintf(
			"pod %q has label %s=%q, but this driver's application is %q", pod.Name, vocab.LabelAppID, got, in.AppID)}
	}
	pol := in.Policy
	if pod.Spec.HostNetwork || pod.Spec.HostPID || pod.Spec.HostIPC {
		return &Refused{Reason: "host-namespace", Message: fmt.Sprintf(
			"executor %q asks for the host's network, PID or IPC namespace, which the sparklet policy forbids", pod.Name)}
	}
	allowHostPath := pol.Executor.Enforced.AllowHostPath
	if allowHostPath == nil {
		allowHostPath = pol.Executor.Defaults.AllowHostPath
	}
	// Not even allowHostPath lets an executor reach the service-account
	// tokens on its node, the driver sidecar's among them.
	if i, what := tokenHostPath(pod); what != "" {
		v := pod.Spec.Volumes[i]
		return &Refused{Reason: "host-path", Message: fmt.Sprintf(
			"executor %q mounts hostPath volume %q (%s), which %s, from which it could read the service-account tokens of "+
				"the node's pods; the sparklet policy never allows it", pod.Name, v.Name, v.HostPath.Path, what)}
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil && (allowHostPath == nil || !*allowHostPath) {
			return &Refused{Reason: "host-path", Field: volumeField(v.Name), Message: fmt.Sprintf(
				"executor %q mounts hostPath volume %q (%s); the sparklet policy allows hostPath only with executor.defaults.allowHostPath: true",
				pod.Name, v.Name, v.HostPath.Path)}
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				return &Refused{Reason: "privileged", Message: fmt.Sprintf(
					"executor %q container %q is privileged, which the sparklet policy forbids", pod.Name, c.Name)}
			}
			if err := pol.CheckImage(c.Image); err != nil {
				return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf("executor %q container %q: %v", pod.Name, c.Name, err)}
			}
		}
	}
	return nil
}

// setController makes the driver pod the executor's controller, replacing a
// reference to the same driver that Spark may have set already. Like Spark's
// own (BasicExecutorFeatureStep.scala, v3.5.4 and v4.0.0), the reference has
// no blockOwnerDeletion: setting it needs update on the driver's
// pods/finalizers under the OwnerReferencesPermissionEnforcement admission
// plugin, and garbage collection does not need it.
func setController(pod, driver *corev1.Pod) {
	yes := true
	ref := metav1.OwnerReference{
		APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID,
		Controller: &yes,
	}
	refs := pod.OwnerReferences[:0:0]
	for _, r := range pod.OwnerReferences {
		if r.UID == driver.UID || (r.Controller != nil && *r.Controller) {
			continue
		}
		refs = append(refs, r)
	}
	pod.OwnerReferences = append(refs, ref)
}
