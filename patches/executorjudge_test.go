package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/vocab"
)

// sparkExecutor is the executor pod stock Spark would ask the sidecar for,
// written out by hand from BasicExecutorFeatureStep and
// MountVolumesFeatureStep (v3.5.x, v4.x) for each case below, so that the
// test does not share the code it checks.
func sparkExecutor(cpuRequest, cpuLimit, memory string, volumes ...corev1.Volume) *corev1.Pod {
	pod := executorPod()
	c := &pod.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
	}
	if cpuLimit != "" {
		c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(cpuLimit)
	}
	pod.Spec.Volumes = volumes
	return pod
}

// TestAdmittedDriversExecutorsAccepted: whatever admission lets through,
// the sidecar accepts the executors Spark then asks for. A driver whose
// every executor the sidecar refuses would wait for executors forever.
func TestAdmittedDriversExecutorsAccepted(t *testing.T) {
	const pol = `
limits:
  executor: {maxCores: "4", maxMemory: 8Gi}
allowedImages: ["apache/spark:*"]
`
	hostPath := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/spark-data"}}}
	cases := []struct {
		name     string
		conf     string
		executor *corev1.Pod
		refused  string // what admission's refusal must say; empty when admitted
	}{
		{"within the limits", "spark.executor.cores 4\nspark.executor.memory 6g\n",
			sparkExecutor("4", "", "6758Mi"), ""},
		{"the legacy YARN overhead key", "spark.yarn.executor.memoryOverhead 8g\n",
			sparkExecutor("1", "", "9216Mi"), "spark.yarn.executor.memoryOverhead"},
		{"the legacy off-heap switch", "spark.unsafe.offHeap true\nspark.memory.offHeap.size 8g\n",
			sparkExecutor("1", "", "9600Mi"), "spark.unsafe.offHeap"},
		{"the new overhead key wins over the legacy one", "spark.executor.memoryOverhead 1g\nspark.yarn.executor.memoryOverhead 64g\n",
			sparkExecutor("1", "", "2Gi"), ""},
		{"the CPU request", "spark.kubernetes.executor.request.cores 8\n",
			sparkExecutor("8", "", "1408Mi"), "spark.kubernetes.executor.request.cores"},
		{"a small request under many cores", "spark.executor.cores 6\nspark.kubernetes.executor.request.cores 2\n",
			sparkExecutor("2", "", "1408Mi"), ""},
		{"the CPU limit", "spark.kubernetes.executor.limit.cores 8\n",
			sparkExecutor("1", "8", "1408Mi"), "spark.kubernetes.executor.limit.cores"},
		{"a hostPath volume", "spark.kubernetes.executor.volumes.hostPath.data.mount.path /data\n" +
			"spark.kubernetes.executor.volumes.hostPath.data.options.path /mnt/spark-data\n",
			sparkExecutor("1", "", "1408Mi", hostPath), "spark.kubernetes.executor.volumes.hostPath.data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = "apache/spark:4.0.1"
				p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf}
			})
			_, err := inject(t, pod, mustPolicy(t, pol))
			var r *Refused
			if err != nil && !errors.As(err, &r) {
				t.Fatal(err)
			}
			ex := tc.executor
			ex.Spec.Containers[0].Image = "apache/spark:4.0.1"
			if tc.refused != "" {
				if r == nil || !strings.Contains(r.Message, tc.refused) {
					t.Fatalf("admission: %v; want a refusal naming %s", err, tc.refused)
				}
				// The refusal is the sidecar's own judgment.
				in := ExecutorInput{Policy: mustPolicy(t, pol), Driver: ReadDriver(driverPod()), AppID: "spark-test"}
				if _, err := Executor(ex, in); err == nil {
					t.Errorf("admission refused (%s), but the sidecar accepts the executor Spark asks for", r.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("admission refused: %v", err)
			}
			in := ExecutorInput{Policy: mustPolicy(t, pol), Driver: ReadDriver(pod), AppID: pod.Labels[vocab.LabelAppID]}
			ex.Labels[vocab.LabelAppID] = in.AppID
			if _, err := Executor(ex, in); err != nil {
				t.Fatalf("admitted, but the sidecar refuses its executors: %v", err)
			}
		})
	}
}

// TestForeignKeysReadBack: keys that do not start with "spark." are kept in
// the effective conf with a warning, and the sidecar reads that conf back
// whole: its memory arithmetic for an enforced key still sees the driver's
// spark.executor.memory.
func TestForeignKeysReadBack(t *testing.T) {
	pol := mustPolicy(t, "spark:\n  enforced:\n    spark.executor.memoryOverhead: 1g\n")
	pod := driverPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{vocab.AnnotationSparkConf: "hive.metastore.uris thrift://metastore:9083\nspark.executor.memory 2g\n"}
		p.Spec.Containers[0].Args = append([]string{"driver", "--conf", "fs.s3a.endpoint=http://minio:9000"}, p.Spec.Containers[0].Args[1:]...)
	})
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], "hive.metastore.uris, which Spark ignores") ||
		!strings.Contains(res.Warnings[1], "--conf sets fs.s3a.endpoint") {
		t.Errorf("warnings = %q, want one for each key Spark ignores", res.Warnings)
	}
	conf := ReadDriver(pod).Conf
	if conf["hive.metastore.uris"] != "thrift://metastore:9083" || conf["fs.s3a.endpoint"] != "http://minio:9000" || conf["spark.executor.memory"] != "2g" {
		t.Fatalf("the sidecar reads back %v", conf)
	}
	ex := executorPod()
	if _, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(pod), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if got := ex.Spec.Containers[0].Resources.Limits.Memory(); got.String() != "3Gi" {
		t.Errorf("executor memory = %s, want 3Gi (the driver's 2g heap + the enforced 1g overhead)", got)
	}
}

// TestSparkValue: keys are read as Spark of the image's line reads them.
func TestSparkValue(t *testing.T) {
	conf := map[string]string{
		"spark.yarn.executor.memoryOverhead": "2g", "spark.unsafe.offHeap": "true", "spark.memory.offHeap.enabled": "false",
		keyMinOverhead: "1g", keyImage: "apache/spark:3.5.4",
	}
	for _, tc := range []struct {
		key, image, want, from string
	}{
		{keyMemoryOverhead, "apache/spark:4.0.1", "2g", "spark.yarn.executor.memoryOverhead"},
		{keyOffHeapEnabled, "apache/spark:4.0.1", "false", keyOffHeapEnabled},
		{keyMinOverhead, "apache/spark:3.5.4", "", ""},
		{keyMinOverhead, "apache/spark:v4.0.1-python3", "1g", keyMinOverhead},
		{keyMinOverhead, "example.com/spark:latest", "1g", keyMinOverhead},
		{keyExecutorImage, "", "apache/spark:3.5.4", keyImage},
	} {
		v, from, ok := sparkValue(conf, tc.key, lineOfImage(tc.image))
		if v != tc.want || from != tc.from || ok != (tc.from != "") {
			t.Errorf("sparkValue(%s) on %s = %q from %q (%v), want %q from %q", tc.key, tc.image, v, from, ok, tc.want, tc.from)
		}
	}
}
