package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

// The driver's ServiceAccount may create pods, and only the sidecar holds
// its token. Executors must never run as it: any container of theirs
// could mount its token. Spark picks an executor's account
// (ExecutorKubernetesCredentialsFeatureStep.scala, v3.5.x and v4.x) from
// the executor pod template's serviceAccountName (or serviceAccount),
// else spark.kubernetes.authenticate.executor.serviceAccountName, else
// spark.kubernetes.authenticate.driver.serviceAccountName; with none of
// them the pod names no account and the API server gives it default.

// Spark's keys for the executors' ServiceAccount, in the order Spark
// falls back on them.
const (
	confExecutorServiceAccount = "spark.kubernetes.authenticate.executor.serviceAccountName"
	confDriverServiceAccount   = "spark.kubernetes.authenticate.driver.serviceAccountName"
	confExecutorPodTemplate    = "spark.kubernetes.executor.podTemplateFile"
)

// defaultServiceAccount is the account the API server's ServiceAccount
// admission plugin gives a pod that names none.
const defaultServiceAccount = "default"

// podServiceAccount is the account a pod runs as: serviceAccountName, else
// the deprecated serviceAccount, else default.
func podServiceAccount(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	if spec.DeprecatedServiceAccount != "" {
		return spec.DeprecatedServiceAccount
	}
	return defaultServiceAccount
}

// driverServiceAccount is the account the driver pod runs as once the
// driver policy is applied (applyDriverPolicy): enforced, else the pod's
// own, else the policy's default (which also replaces default).
func driverServiceAccount(pod *corev1.Pod, pol *policy.Effective) string {
	if sa := pol.Driver.Enforced.ServiceAccountName; sa != "" {
		return sa
	}
	sa := podServiceAccount(&pod.Spec)
	if d := pol.Driver.Defaults.ServiceAccountName; d != "" && sa == defaultServiceAccount {
		return d
	}
	return sa
}

// executorAccountFromConf is the account Spark gives executors whose pod
// template names none, and the key it comes from; key is "" when neither
// key is set. A key set to "" still wins, and names no account: Spark's
// buildPodWithServiceAccount (KubernetesUtils.scala) sets it as it is, and
// the API server gives the pod default.
func executorAccountFromConf(conf map[string]string) (account, key string) {
	for _, k := range []string{confExecutorServiceAccount, confDriverServiceAccount} {
		if v, ok := conf[k]; ok {
			if v == "" {
				v = defaultServiceAccount
			}
			return v, k
		}
	}
	return "", ""
}

// refuseLentServiceAccount refuses a driver whose executors would run as
// its own ServiceAccount, and warns when only the executor pod template,
// which the webhook cannot read, decides.
func refuseLentServiceAccount(pod *corev1.Pod, p *plan) error {
	driver := driverServiceAccount(pod, p.pol)
	account, key := executorAccountFromConf(p.conf)
	const why = "its token may create pods and only the sparklet sidecar may hold it"
	if key != "" {
		if account != driver {
			return nil
		}
		how, fix := key, "set it to another ServiceAccount"
		if key == confDriverServiceAccount {
			how = fmt.Sprintf("%s (Spark's fallback when %s is unset)", key, confExecutorServiceAccount)
			fix = fmt.Sprintf("remove it (a client-mode driver has no other use for it), or set %s to another ServiceAccount", confExecutorServiceAccount)
		}
		return &Refused{Reason: "driver-service-account", Message: fmt.Sprintf(
			"executors would run as the driver's ServiceAccount %q, from %s: %s; %s", driver, how, why, fix)}
	}
	if driver != defaultServiceAccount {
		return nil
	}
	if tmpl := p.conf[confExecutorPodTemplate]; tmpl != "" {
		// Kept short: the API server may truncate a warning over 256
		// characters.
		p.warn(fmt.Sprintf("executors run as the driver's ServiceAccount %q unless pod template %s names another, "+
			"and the sidecar refuses them; set %s", driver, tmpl, confExecutorServiceAccount))
		return nil
	}
	return &Refused{Reason: "driver-service-account", Message: fmt.Sprintf(
		"executors would run as the driver's ServiceAccount %q: with neither %s nor %s set they get the namespace's default, "+
			"which is the driver's, and %s; run the driver as a ServiceAccount of its own (spec.serviceAccountName, or the policy's "+
			"driver.defaults.serviceAccountName), or set %s to another ServiceAccount",
		driver, confExecutorServiceAccount, confDriverServiceAccount, why, confExecutorServiceAccount)}
}

// refuseLentExecutorAccount refuses an executor pod that would run as the
// driver's ServiceAccount, however it came to name it.
func refuseLentExecutorAccount(pod *corev1.Pod, driver *corev1.Pod) error {
	if driver == nil {
		return nil
	}
	account := podServiceAccount(&driver.Spec)
	if podServiceAccount(&pod.Spec) != account {
		return nil
	}
	return &Refused{Reason: "driver-service-account", Message: fmt.Sprintf(
		"executor %q would run as the driver's ServiceAccount %q, whose token may create pods: only the sparklet sidecar may hold it; "+
			"name another in the executor pod template's serviceAccountName or %s", pod.Name, account, confExecutorServiceAccount)}
}

// warnSkippedOnDriverAccount warns when a pod that sparklet leaves alone
// runs as a driver ServiceAccount of the policy: nothing keeps that
// account's token from its containers but the chart's
// ValidatingAdmissionPolicy, which refuses such pods.
func warnSkippedOnDriverAccount(pod *corev1.Pod, pol *policy.Effective, why string) []string {
	if pol == nil {
		return nil
	}
	account := podServiceAccount(&pod.Spec)
	if account != pol.Driver.Defaults.ServiceAccountName && account != pol.Driver.Enforced.ServiceAccountName {
		return nil
	}
	return []string{fmt.Sprintf("the pod runs as the sparklet driver ServiceAccount %q, whose token may create pods, "+
		"but sparklet leaves it alone (%s): run it as another ServiceAccount", account, why)}
}
