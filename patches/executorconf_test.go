package patches

import (
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/vocab"
)

const enforcingPolicy = `
spark:
  enforced:
    spark.kubernetes.executor.container.image: apache/spark:3.5.4-approved
    spark.kubernetes.container.image.pullPolicy: Always
    spark.kubernetes.executor.label.team: data
    spark.kubernetes.executor.annotation.cost-center: "42"
    spark.kubernetes.node.selector.pool: spark
    spark.executorEnv.TZ: UTC
    spark.executor.cores: "2"
    spark.kubernetes.executor.limit.cores: "3"
    spark.executor.memory: 4g
    spark.kubernetes.executor.scheduler.name: volcano
    spark.eventLog.enabled: "true"
allowedImages: ["apache/spark:*"]
`

// What the JVM asks for after setting the same keys in its own code.
func TestSidecarEnforcesSparkKeysThatShapeExecutors(t *testing.T) {
	driver := driverPod()
	driver.UID = "driver-uid"
	driver.Annotations = map[string]string{vocab.AnnotationEffectiveConf: "spark.executor.memoryOverheadFactor 0.25\n"}
	in := ExecutorInput{Policy: mustPolicy(t, enforcingPolicy), Driver: ReadDriver(driver), AppID: "spark-test"}
	pod := executorPod(func(p *corev1.Pod) {
		p.Labels["team"] = "mine"
		p.Annotations = map[string]string{"cost-center": "0"}
		p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		p.Spec.SchedulerName = "default-scheduler"
		c := &p.Spec.Containers[0]
		c.Image = "apache/spark:3.5.4"
		c.Env = []corev1.EnvVar{{Name: "TZ", Value: "PST"}, {Name: "SPARK_EXECUTOR_CORES", Value: "16"}, {Name: "SPARK_EXECUTOR_MEMORY", Value: "30720m"}}
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("31104Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("31104Mi")},
		}
	})
	if _, err := Executor(pod, in); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	checks := map[string][2]string{
		"image":                 {c.Image, "apache/spark:3.5.4-approved"},
		"pull policy":           {string(c.ImagePullPolicy), "Always"},
		"label":                 {pod.Labels["team"], "data"},
		"annotation":            {pod.Annotations["cost-center"], "42"},
		"node selector":         {pod.Spec.NodeSelector["pool"], "spark"},
		"scheduler":             {pod.Spec.SchedulerName, "volcano"},
		"executorEnv":           {c.Env[envIndex(c.Env, "TZ")].Value, "UTC"},
		"SPARK_EXECUTOR_CORES":  {c.Env[envIndex(c.Env, "SPARK_EXECUTOR_CORES")].Value, "2"},
		"SPARK_EXECUTOR_MEMORY": {c.Env[envIndex(c.Env, "SPARK_EXECUTOR_MEMORY")].Value, "4096m"},
		"cpu request":           {c.Resources.Requests.Cpu().String(), "2"},
		"cpu limit":             {c.Resources.Limits.Cpu().String(), "3"},
		// 4096 + max(0.25 x 4096, 384): the driver's factor, the enforced heap.
		"memory request": {c.Resources.Requests.Memory().String(), "5Gi"},
		"memory limit":   {c.Resources.Limits.Memory().String(), "5Gi"},
	}
	for what, got := range checks {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}
}

func TestOnlyEnforcedKeysTouchExecutors(t *testing.T) {
	pod := executorPod()
	before := pod.Spec.Containers[0].DeepCopy()
	if _, err := Executor(pod, executorInput(t)); err != nil { // testPolicy enforces spark.eventLog.enabled only
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if c.Image != before.Image || !c.Resources.Requests.Memory().Equal(*before.Resources.Requests.Memory()) || hasEnv(c.Env, "SPARK_EXECUTOR_MEMORY") {
		t.Errorf("an executor was changed by keys the policy does not enforce: %+v", c)
	}
	for k, want := range map[string]bool{
		"spark.executor.memory": true, "spark.kubernetes.executor.label.x": true, "spark.executorEnv.A": true,
		"spark.eventLog.enabled": false, "spark.sql.shuffle.partitions": false, "spark.executor.extraJavaOptions": false,
	} {
		if got := enforcedOnExecutors(k); got != want {
			t.Errorf("enforcedOnExecutors(%s) = %v, want %v", k, got, want)
		}
	}
}

// A recovery-mode executor keeps the cores Spark gave it under an enforced
// spark.executor.cores; an executor that asks for more gets the enforced
// value. The pod is the recovery-mode executor the 4.3.0 JVM asked for in
// e2e/realspark's TestRecoveryModeExecutors, without what the API server
// and the sidecar added (server defaults, the policy's labels): Spark sets
// SPARK_EXECUTOR_CORES=1 on the pod's usual CPU request
// (BasicExecutorFeatureStep, 4.2+).
func TestRecoveryModeExecutorKeepsItsCores(t *testing.T) {
	data, err := os.ReadFile("testdata/recovery-executor-4.3.0.json")
	if err != nil {
		t.Fatal(err)
	}
	pol := mustPolicy(t, "spark:\n  enforced:\n    spark.executor.cores: \"2\"\n    spark.kubernetes.executor.request.cores: 100m\nallowedImages: [\"apache/spark:*\"]\n")
	for _, tc := range []struct{ asked, want string }{
		{"1", "1"}, // recovery mode, as Spark sent it
		{"2", "2"},
		{"4", "2"},      // more than enforced
		{"0", "2"},      // not a core count Spark would send
		{"one", "2"},    // nor this
		{"", "2"},       // an empty value
		{"delete", "2"}, // no SPARK_EXECUTOR_CORES at all
	} {
		t.Run("asked "+tc.asked, func(t *testing.T) {
			var pod corev1.Pod
			if err := json.Unmarshal(data, &pod); err != nil {
				t.Fatal(err)
			}
			c := &pod.Spec.Containers[0]
			i := envIndex(c.Env, "SPARK_EXECUTOR_CORES")
			if i < 0 || c.Env[i].Value != "1" {
				t.Fatalf("the fixture's SPARK_EXECUTOR_CORES is not Spark's recovery-mode 1: %v", c.Env)
			}
			if tc.asked == "delete" {
				c.Env = append(c.Env[:i], c.Env[i+1:]...)
			} else {
				c.Env[i].Value = tc.asked
			}
			driver := driverPod()
			driver.Name, driver.UID = "sleepy", pod.OwnerReferences[0].UID
			if _, err := Executor(&pod, ExecutorInput{Policy: pol, Driver: ReadDriver(driver), AppID: pod.Labels[vocab.LabelAppID]}); err != nil {
				t.Fatal(err)
			}
			c = &pod.Spec.Containers[0]
			got := "(none)"
			if i := envIndex(c.Env, "SPARK_EXECUTOR_CORES"); i >= 0 {
				got = c.Env[i].Value
			}
			if got != tc.want {
				t.Errorf("SPARK_EXECUTOR_CORES after the sidecar: %q, want %q", got, tc.want)
			}
			if got := c.Resources.Requests.Cpu().String(); got != "100m" {
				t.Errorf("CPU request %s, want the enforced 100m", got)
			}
		})
	}
}
