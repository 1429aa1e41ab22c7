package patches

import (
	"strconv"
	"strings"
)

// The Spark keys that shape an executor pod, as Spark reads them: the key,
// the older keys Spark reads in its place when it is unset, and the first
// release line that reads it. Admission (checkExecutors) and the sidecar
// (enforceExecutorConf) both read the configuration through this table,
// so both judge an executor from the same values Spark builds it from.
//
// Sources, each checked in Spark 3.5 (core 3.5.9, kubernetes 3.5.5), 4.0
// (4.0.1), 4.1 (4.1.0) and 4.2 (core 4.2.0), and the keys and alternates
// found in the 4.3.0 jars' SparkConf$, package$ and k8s Config$ classes;
// e2e/realspark's TestAlternateKeysSizeExecutors checks the memory keys on
// 3.5.9 and 4.3.0 against the executor pods the JVM asks for:
//
//   - core/src/main/scala/org/apache/spark/internal/config/package.scala:
//     the executor keys; MEMORY_OFFHEAP_ENABLED.withAlternative("spark.unsafe.offHeap");
//     EXECUTOR_MIN_MEMORY_OVERHEAD from 4.0.
//   - core/src/main/scala/org/apache/spark/SparkConf.scala,
//     configsWithAlternatives: spark.executor.memoryOverhead falls back to
//     spark.yarn.executor.memoryOverhead (deprecated in 2.3), and
//     spark.memory.offHeap.enabled to spark.unsafe.offHeap (1.6). Typed
//     reads (SparkConfigProvider.get) and SparkConf.contains honour them.
//   - resource-managers/kubernetes/core/src/main/scala/org/apache/spark/deploy/k8s/Config.scala
//     and features/BasicExecutorFeatureStep.scala: the CPU request is
//     spark.kubernetes.executor.request.cores, else spark.executor.cores;
//     spark.kubernetes.executor.limit.cores is the limit; the overhead
//     factor is spark.executor.memoryOverheadFactor, else
//     spark.kubernetes.memoryOverheadFactor.
//   - KubernetesVolumeUtils.scala and MountVolumesFeatureStep.scala:
//     spark.kubernetes.executor.volumes.<type>.<name>.* (prefixKey).
//
// No key here changed between those lines but spark.executor.minMemoryOverhead.
type sparkKey struct {
	key        string
	alternates []string  // read, in this order, when key is unset
	since      sparkLine // the first line that reads key; zero for all
	shapes     string    // what it sets in the executor pod
}

// sparkLine is a Spark release line such as 3.5.
type sparkLine struct{ major, minor int }

// newestLine is the line assumed when an image's tag names none.
var newestLine = sparkLine{4, 3}

func (l sparkLine) atLeast(o sparkLine) bool {
	return l.major > o.major || l.major == o.major && l.minor >= o.minor
}

// lineOfImage tells the Spark line from an image tag such as
// apache/spark:3.5.4 or :v4.0.1-python3; other tags are the newest line.
func lineOfImage(image string) sparkLine {
	tag, ok := imageTag(image)
	if !ok {
		return newestLine
	}
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) < 2 {
		return newestLine
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil || major < 3 {
		return newestLine
	}
	return sparkLine{major, minor}
}

// imageTag is an image reference's tag, without a digest; ok is false
// when it has none.
func imageTag(image string) (tag string, ok bool) {
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, "@")
	_, tag, ok = strings.Cut(name, ":")
	return tag, ok
}

// isSpark3Image tells from an image tag that the image runs Spark 3.x.
func isSpark3Image(image string) bool { return lineOfImage(image).major == 3 }

// lineOf is the line the 3.x/4.x memory rules stand for.
func lineOf(spark3 bool) sparkLine {
	if spark3 {
		return sparkLine{3, 5}
	}
	return newestLine
}

const (
	keyExecutorCores   = "spark.executor.cores"
	keyRequestCores    = "spark.kubernetes.executor.request.cores"
	keyLimitCores      = "spark.kubernetes.executor.limit.cores"
	keyExecutorMemory  = "spark.executor.memory"
	keyMemoryOverhead  = "spark.executor.memoryOverhead"
	keyOverheadFactor  = "spark.executor.memoryOverheadFactor"
	keyK8sFactor       = "spark.kubernetes.memoryOverheadFactor"
	keyMinOverhead     = "spark.executor.minMemoryOverhead"
	keyOffHeapEnabled  = "spark.memory.offHeap.enabled"
	keyOffHeapSize     = "spark.memory.offHeap.size"
	keyPySparkMemory   = "spark.executor.pyspark.memory"
	keyResourceType    = "spark.kubernetes.resource.type"
	keyImage           = "spark.kubernetes.container.image"
	keyExecutorImage   = "spark.kubernetes.executor.container.image"
	prefixExecutorVols = "spark.kubernetes.executor.volumes."
	shapesCPURequest   = "resources.requests.cpu"
	shapesCPULimit     = "resources.limits.cpu"
	shapesMemory       = "resources.requests.memory and resources.limits.memory"
	shapesImage        = "the container image"
	shapesVolumes      = "spec.volumes"
)

// executorKeys is the table.
var executorKeys = []sparkKey{
	{key: keyExecutorCores, shapes: shapesCPURequest},
	{key: keyRequestCores, shapes: shapesCPURequest},
	{key: keyLimitCores, shapes: shapesCPULimit},
	{key: keyExecutorMemory, shapes: shapesMemory},
	{key: keyMemoryOverhead, alternates: []string{"spark.yarn.executor.memoryOverhead"}, shapes: shapesMemory},
	{key: keyOverheadFactor, shapes: shapesMemory},
	{key: keyK8sFactor, shapes: shapesMemory},
	{key: keyMinOverhead, since: sparkLine{4, 0}, shapes: shapesMemory},
	{key: keyOffHeapEnabled, alternates: []string{"spark.unsafe.offHeap"}, shapes: shapesMemory},
	{key: keyOffHeapSize, shapes: shapesMemory},
	{key: keyPySparkMemory, shapes: shapesMemory},
	{key: keyResourceType, shapes: shapesMemory},
	{key: keyExecutorImage, alternates: []string{keyImage}, shapes: shapesImage},
	{key: prefixExecutorVols, shapes: shapesVolumes},
}

// tableKey finds key's entry.
func tableKey(key string) (sparkKey, bool) {
	for _, k := range executorKeys {
		if k.key == key {
			return k, true
		}
	}
	return sparkKey{}, false
}

// sparkValue reads key from conf as Spark of line l does: the key, else
// its alternates in order. from is the key the value came from; ok is
// false when Spark reads none of them.
func sparkValue(conf map[string]string, key string, l sparkLine) (value, from string, ok bool) {
	k, known := tableKey(key)
	if known && !l.atLeast(k.since) {
		return "", "", false
	}
	if v, ok := conf[key]; ok {
		return v, key, true
	}
	for _, alt := range k.alternates {
		if v, ok := conf[alt]; ok {
			return v, alt, true
		}
	}
	return "", "", false
}
