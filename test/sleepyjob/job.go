package sleepyjob

import (
	_ "embed" // sleepy.py
	"fmt"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

//go:embed sleepy.py
var sleepyScript string

// Job is a run of sleepy.py: Tasks tasks that each sleep SleepMS in the
// executors' JVMs, their ids summed through a shuffle, then, with HoldMiB,
// a task whose Python worker fills HoldMiB MiB and holds it HoldS seconds,
// then Idle seconds with no work before the SparkContext stops.
type Job struct {
	Tasks, SleepMS, Idle int
	HoldMiB, HoldS       int
	// Conf is Spark properties in spark-defaults format, the driver pod's
	// sparklet.io/spark-conf annotation.
	Conf string
	// Files go into /opt/job beside the script.
	Files map[string]string
	// Script, when set, is another script run in sleepy.py's place with
	// the same arguments, and ScriptText its text.
	Script, ScriptText string
}

// script returns the name and text of the script the job runs.
func (j Job) script() (name, text string) {
	if j.Script != "" {
		return j.Script, j.ScriptText
	}
	return "sleepy.py", sleepyScript
}

// ConfigMap holds the script and Files; DriverPod mounts it at /opt/job.
func (j Job) ConfigMap(name string) *corev1.ConfigMap {
	file, text := j.script()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{file: text}}
	for file, text := range j.Files {
		cm.Data[file] = text
	}
	return cm
}

// DriverPod is the job's plain driver pod, as a user writes it: the
// apache/spark image of version, the ConfigMap configMap at /opt/job, and
// resources for its Spark container.
func (j Job) DriverPod(name, version, configMap string, resources corev1.ResourceRequirements) *corev1.Pod {
	file, _ := j.script()
	args := []string{"driver", "local:///opt/job/" + file, strconv.Itoa(j.Tasks), strconv.Itoa(j.SleepMS), strconv.Itoa(j.Idle)}
	if j.HoldMiB > 0 {
		args = append(args, strconv.Itoa(j.HoldMiB), strconv.Itoa(j.HoldS))
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{vocab.AnnotationSparkConf: j.Conf},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:         "spark",
				Image:        "apache/spark:" + version,
				Args:         args,
				VolumeMounts: []corev1.VolumeMount{{Name: "job", MountPath: "/opt/job"}},
				Resources:    resources,
			}},
			Volumes: []corev1.Volume{{Name: "job", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}},
		},
	}
}

var sumLine = regexp.MustCompile(`sleepy: sum of ids is (\d+)`)

// Summed reports whether the driver's log has the job's sum: the tasks
// are done and the driver idles.
func Summed(driverLog string) bool { return sumLine.MatchString(driverLog) }

// CheckSum checks the sum the job printed: that of 0..Tasks-1, which only
// every task's row gives.
func (j Job) CheckSum(driverLog string) error {
	m := sumLine.FindStringSubmatch(driverLog)
	if m == nil {
		return fmt.Errorf("no %q line in the driver's log", "sleepy: sum of ids is")
	}
	if want := strconv.Itoa(j.Tasks * (j.Tasks - 1) / 2); m[1] != want {
		return fmt.Errorf("sum of ids %s, want %s", m[1], want)
	}
	return nil
}

// Done is what the driver prints once it has idled, before it stops the
// SparkContext (which deletes the executors too).
const Done = "sleepy: done"

// Held is what the driver prints once the HoldMiB task has returned.
const Held = "sleepy: held "

// FixedConf asks for two executors, without dynamic allocation.
const FixedConf = `spark.executor.instances 2
spark.executor.memory 512m
spark.driver.memory 512m
`

// DynamicConf turns on dynamic allocation with shuffle tracking, from no
// executors up to maxExecutors, and releases an executor after 5 idle
// seconds. An executor that holds shuffle files waits for the shuffle
// timeout instead of the idle timeout (ExecutorMonitor.updateTimeout,
// Spark v3.5.0 core/src/main/scala/org/apache/spark/scheduler/dynalloc/
// ExecutorMonitor.scala), infinite by default.
func DynamicConf(maxExecutors int) string {
	return `spark.dynamicAllocation.enabled true
spark.dynamicAllocation.shuffleTracking.enabled true
spark.executor.instances 0
spark.dynamicAllocation.minExecutors 0
spark.dynamicAllocation.maxExecutors ` + strconv.Itoa(maxExecutors) + `
spark.dynamicAllocation.executorIdleTimeout 5s
spark.dynamicAllocation.shuffleTracking.timeout 5s
spark.dynamicAllocation.schedulerBacklogTimeout 1s
spark.executor.memory 512m
spark.driver.memory 512m
`
}
