package patches

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sparklet/sparklet/patches/sparkconf"
)

// ExecutorMemory is the memory of an executor pod as Spark sizes it for the
// default resource profile, in MiB.
type ExecutorMemory struct {
	Heap, Overhead, OffHeap, PySpark int64
}

// Total is the pod's memory request and limit: what
// BasicExecutorFeatureStep puts in the executor container's resources.
func (m ExecutorMemory) Total() int64 { return m.Heap + m.Overhead + m.OffHeap + m.PySpark }

// Spark's defaults for the executor memory keys.
const (
	defaultExecutorMemoryMiB = 1024 // spark.executor.memory
	defaultMinOverheadMiB    = 384  // MEMORY_OVERHEAD_MIN_MIB; spark.executor.minMemoryOverhead in 4.x
	defaultOverheadFactor    = 0.1  // spark.kubernetes.memoryOverheadFactor
)

// ExecutorMemoryOf computes an executor's memory from a client-mode
// driver's Spark configuration, as Spark does:
//
//   - BasicExecutorFeatureStep.scala (v3.5.x, v4.0.x, v4.3.0) takes the
//     overhead factor from spark.executor.memoryOverheadFactor when set,
//     else spark.kubernetes.memoryOverheadFactor (0.1), and sizes the pod
//     with ResourceProfile.getResourcesForClusterManager:
//     heap + overhead + off-heap + PySpark memory.
//   - ResourceProfile.calculateOverHeadMemory: spark.executor.memoryOverhead
//     when set, else max(int(factor x heap), minimum), where the minimum is
//     384 MiB in 3.x and spark.executor.minMemoryOverhead (384m) from 4.0.
//   - Off-heap memory counts when spark.memory.offHeap.enabled is true
//     (Utils.checkOffHeapEnabled: spark.memory.offHeap.size must then be > 0).
//   - spark.executor.pyspark.memory counts only for a Python application,
//     which BasicExecutorFeatureStep reads from spark.kubernetes.resource.type.
//     Only cluster mode's DriverCommandFeatureStep sets that key, and only
//     cluster mode's BasicDriverFeatureStep raises the default factor to 0.4
//     for non-JVM applications (NON_JVM_MEMORY_OVERHEAD_FACTOR); in client
//     mode, where sparklet runs drivers, neither happens unless the
//     configuration sets them.
//
// Every key is read through the table of Spark's keys (sparkValue), with
// the older keys Spark reads in its place. spark3 selects the 3.x rules
// (no spark.executor.minMemoryOverhead). Errors name the key at fault.
func ExecutorMemoryOf(conf map[string]string, spark3 bool) (ExecutorMemory, error) {
	line := lineOf(spark3)
	var m ExecutorMemory
	var err error
	if m.Heap, err = confMiB(conf, keyExecutorMemory, line, defaultExecutorMemoryMiB); err != nil {
		return m, err
	}
	factor := defaultOverheadFactor
	for _, k := range []string{keyK8sFactor, keyOverheadFactor} {
		if v, from, ok := sparkValue(conf, k, line); ok {
			f, perr := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if perr != nil || f <= 0 {
				return m, fmt.Errorf("%s=%q is not a positive number such as 0.1", from, v)
			}
			factor = f
		}
	}
	minOverhead, err := confMiB(conf, keyMinOverhead, line, defaultMinOverheadMiB)
	if err != nil {
		return m, err
	}
	// Scala's Double.toInt saturates at Int.MaxValue.
	m.Overhead = max(int64(min(factor*float64(m.Heap), math.MaxInt32)), minOverhead)
	if _, _, ok := sparkValue(conf, keyMemoryOverhead, line); ok {
		if m.Overhead, err = confMiB(conf, keyMemoryOverhead, line, 0); err != nil {
			return m, err
		}
	}
	if enabled, from, _ := sparkValue(conf, keyOffHeapEnabled, line); strings.EqualFold(strings.TrimSpace(enabled), "true") {
		size, _, set := sparkValue(conf, keyOffHeapSize, line)
		b, err := sparkconf.Bytes(size, 1)
		if set && err != nil {
			return m, fmt.Errorf("%s: %v", keyOffHeapSize, err)
		}
		if b <= 0 {
			return m, fmt.Errorf("%s is true, so %s must be set above 0 (Spark refuses it otherwise); set it, e.g. to 2g", from, keyOffHeapSize)
		}
		m.OffHeap = b >> 20
	}
	if v, _, _ := sparkValue(conf, keyResourceType, line); strings.TrimSpace(v) == "python" {
		if m.PySpark, err = confMiB(conf, keyPySparkMemory, line, 0); err != nil {
			return m, err
		}
	}
	return m, nil
}

// confMiB reads a MiB-default memory key as Spark of line l does, or def
// when Spark reads none. Errors name the key the value came from.
func confMiB(conf map[string]string, key string, l sparkLine, def int64) (int64, error) {
	v, from, ok := sparkValue(conf, key, l)
	if !ok {
		return def, nil
	}
	n, err := sparkconf.MiB(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", from, err)
	}
	return n, nil
}
