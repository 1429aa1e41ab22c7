package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// LabelSparkOperator marks the driver pods the Kubeflow spark-operator
// launches (spark-operator v2.x, internal/controller/sparkapplication).
const LabelSparkOperator = "sparkoperator.k8s.io/launched-by-spark-operator"

// The marks of a driver pod that spark-submit builds in cluster mode
// (resource-managers/kubernetes, Constants.scala, Spark 3.5.x and 4.0.x):
// Client.scala mounts the driver's ConfigMap as the volume
// spark-conf-volume-driver at /opt/spark/conf, and DriverCommandFeatureStep
// starts the image's entrypoint as "driver --properties-file
// /opt/spark/conf/spark.properties". Both come with the spark-app-selector
// label that KubernetesDriverConf.labels sets.
const (
	sparkSubmitConfVolume = "spark-conf-volume-driver"
	sparkSubmitConfDir    = "/opt/spark/conf/"
)

// launchedElsewhere recognises a driver pod that another system built and
// configured, which sparklet leaves alone: one the spark-operator launched,
// or one spark-submit created in cluster mode. A namespace can so move to
// sparklet one application at a time.
func launchedElsewhere(pod *corev1.Pod) *Skip {
	if _, injected := pod.Annotations[vocab.AnnotationStatus]; injected {
		return nil
	}
	if pod.Labels[LabelSparkOperator] == "true" {
		return &Skip{Reason: SkipLaunchedBySparkOperator, Message: fmt.Sprintf(
			"sparklet left this pod unchanged: the Kubeflow spark-operator launched it (label %s=true) "+
				"and configured its driver itself", LabelSparkOperator)}
	}
	if _, ok := pod.Labels[vocab.LabelAppID]; ok && (hasVolume(pod, sparkSubmitConfVolume) || runsSubmittedDriver(pod)) {
		return &Skip{Reason: SkipSparkSubmitClusterMode, Message: fmt.Sprintf(
			"sparklet left this pod unchanged: spark-submit created it in cluster mode (label %s and volume %s "+
				"or args \"driver --properties-file %s...\") and configured its driver itself", vocab.LabelAppID, sparkSubmitConfVolume, sparkSubmitConfDir)}
	}
	return nil
}

func hasVolume(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// runsSubmittedDriver tells whether a container starts the image's
// entrypoint with the properties file spark-submit wrote for it.
func runsSubmittedDriver(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		a := c.Args
		if len(a) >= 3 && a[0] == "driver" && a[1] == "--properties-file" && strings.HasPrefix(a[2], sparkSubmitConfDir) {
			return true
		}
	}
	return false
}
