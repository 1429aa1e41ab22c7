package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// uniqueID is KubernetesUtils.uniqueID (K/deploy/k8s/KubernetesUtils.scala):
// three random bytes in hex, then the low 40 bits of the clock in ms, hex.
func uniqueID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + strconv.FormatInt(time.Now().UnixMilli()&0xFFFFFFFFFF, 16)
}

// configMapName is KubernetesClientUtils.configMapNameExecutor
// (K/deploy/k8s/submit/KubernetesClientUtils.scala): spark-exec-<unique id>,
// cut to 253 characters with the suffix, then -conf-map.
func configMapName() string { return "spark-exec-" + uniqueID() + "-conf-map" }

// ownerRef is KubernetesUtils.addOwnerReference: apiVersion, kind, name and
// uid of the driver pod as the GET returned them, controller true.
func ownerRef(driver *corev1.Pod) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: driver.APIVersion, Kind: driver.Kind, Name: driver.Name, UID: driver.UID, Controller: &yes}
}

// executorConfigMap is what KubernetesClusterSchedulerBackend.setUpExecutorConfigMap
// creates: immutable, labelled with the app and the executor role, owned
// by the driver pod; data are the conf dir files plus spark.properties and
// the namespace key (KubernetesClientUtils.buildSparkConfDirFilesMap).
func (d *Driver) executorConfigMap() *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.confMap,
			Namespace:       d.cfg.Namespace,
			Labels:          map[string]string{labelApp: d.cfg.AppID, labelRole: roleExecutor},
			OwnerReferences: []metav1.OwnerReference{ownerRef(d.driverPod)},
		},
		Immutable: &yes,
		Data: map[string]string{
			"spark.kubernetes.namespace": d.cfg.Namespace,
			"spark.properties":           "#Java properties built from Kubernetes config map with name: " + d.confMap + "\nspark.app.id=" + d.cfg.AppID + "\n",
		},
	}
}

const (
	labelApp       = "spark-app-selector"
	labelRole      = "spark-role"
	labelExecID    = "spark-exec-id"
	labelProfile   = "spark-exec-resourceprofile-id"
	labelVersion   = "spark-version"
	labelAppName   = "spark-app-name"
	labelInactive  = "spark-exec-inactive"
	roleExecutor   = "executor"
	executorMemory = "1408Mi" // 1g heap + 384Mi minimum overhead (BasicExecutorFeatureStep)
)

// executorPod is what KubernetesExecutorBuilder builds with Spark's
// defaults: BasicExecutorFeatureStep (name, labels, owner, env, resources,
// conf volume) and LocalDirsFeatureStep (one emptyDir local dir), in
// K/deploy/k8s/features/, 3.5.4 and 4.0.0.
func (d *Driver) executorPod(id int) *corev1.Pod {
	name := fmt.Sprintf("%s-exec-%d", d.cfg.PodNamePrefix, id)
	mem := resource.MustParse(executorMemory)
	driverHost := d.driverPod.Status.PodIP
	if driverHost == "" {
		driverHost = d.cfg.DriverPodName
	}
	localDir := "/var/data/spark-" + d.localDirID
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	mode := int32(420)
	hostname := name
	if len(hostname) > 63 {
		hostname = hostname[len(hostname)-63:]
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				labelApp: d.cfg.AppID, labelRole: roleExecutor, labelExecID: strconv.Itoa(id),
				labelProfile: "0", labelVersion: d.cfg.Mode.sparkVersion(), labelAppName: d.cfg.AppName,
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef(d.driverPod)},
		},
		Spec: corev1.PodSpec{
			Hostname:      hostname,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:            "spark-kubernetes-executor",
				Image:           d.cfg.ExecutorImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"executor"},
				Ports:           []corev1.ContainerPort{{Name: "blockmanager", ContainerPort: 7079}},
				Env: []corev1.EnvVar{
					{Name: "SPARK_USER", Value: "spark"},
					{Name: "SPARK_DRIVER_URL", Value: "spark://CoarseGrainedScheduler@" + driverHost + ":7078"},
					{Name: "SPARK_EXECUTOR_CORES", Value: "1"},
					{Name: "SPARK_EXECUTOR_MEMORY", Value: "1024m"},
					{Name: "SPARK_APPLICATION_ID", Value: d.cfg.AppID},
					{Name: "SPARK_CONF_DIR", Value: "/opt/spark/conf"},
					{Name: "SPARK_EXECUTOR_ID", Value: strconv.Itoa(id)},
					{Name: "SPARK_RESOURCE_PROFILE_ID", Value: "0"},
					{Name: "SPARK_JAVA_OPT_0", Value: "-Dspark.driver.port=7078"},
					{Name: "SPARK_EXECUTOR_POD_IP", ValueFrom: fieldRef("status.podIP")},
					{Name: "SPARK_EXECUTOR_POD_NAME", ValueFrom: fieldRef("metadata.name")},
					{Name: "SPARK_LOCAL_DIRS", Value: localDir},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "spark-local-dir-1", MountPath: localDir},
					{Name: "spark-conf-volume-exec", MountPath: "/opt/spark/conf"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "spark-local-dir-1", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "spark-conf-volume-exec", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: d.confMap}, DefaultMode: &mode,
				}}},
			},
		},
	}
}

// podState is ExecutorPodsSnapshot.toState reduced to what the allocator
// and the lifecycle manager use.
type podState int

const (
	statePending podState = iota
	stateRunning
	stateFailed
	stateSucceeded
	stateDeleted
	stateUnknown
)

func stateOf(p *corev1.Pod, deleted bool) podState {
	if deleted || p.DeletionTimestamp != nil {
		return stateDeleted
	}
	switch p.Status.Phase {
	case corev1.PodPending:
		return statePending
	case corev1.PodRunning:
		return stateRunning
	case corev1.PodFailed:
		return stateFailed
	case corev1.PodSucceeded:
		return stateSucceeded
	}
	return stateUnknown
}
