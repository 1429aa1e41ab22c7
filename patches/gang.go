package patches

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	podresource "k8s.io/component-helpers/resource"
)

// Gang is what a batch scheduler must hold for one application: the
// driver pod and the executors Spark asks for first.
type Gang struct {
	// Driver is the admitted driver pod's requests, sidecar and init
	// containers included.
	Driver corev1.ResourceList `json:"driver"`
	// Executors is how many executors Spark requests at start.
	Executors int `json:"executors"`
	// Executor is one executor pod's requests.
	Executor corev1.ResourceList `json:"executor"`
}

// sparkDefaultExecutors is DEFAULT_NUMBER_EXECUTORS in Spark's
// SchedulerBackendUtils: the executors of an application that sets no
// spark.executor.instances and has no dynamic allocation.
const sparkDefaultExecutors = 2

// GangOf sizes an application's gang as Spark and the schedulers do:
//
//   - The driver is the pod as admitted: k8s.io/component-helpers'
//     PodRequests, which counts native sidecars, init containers and the
//     pod overhead the way the scheduler does.
//   - The executor count is SchedulerBackendUtils.getInitialTargetExecutorNumber
//     (Spark 3.5 to 4.3): spark.executor.instances (default 2), or with
//     dynamic allocation Utils.getDynamicAllocationInitialExecutors,
//     max(minExecutors, initialExecutors, instances), initialExecutors
//     defaulting to minExecutors and instances to 0.
//   - An executor's CPU is BasicExecutorFeatureStep's request:
//     spark.kubernetes.executor.request.cores, else spark.executor.cores
//     (default 1); its memory is ExecutorMemoryOf's total; and
//     spark.executor.resource.<name>.amount with its .vendor is the
//     extended resource <vendor>/<name> (KubernetesUtils.buildResourcesQuantities).
//
// conf is the driver's effective configuration; spark3 selects the 3.x
// memory rules. Errors name the Spark key at fault.
func GangOf(driver *corev1.Pod, conf map[string]string, spark3 bool) (Gang, error) {
	g := Gang{Driver: podresource.PodRequests(driver, podresource.PodResourcesOptions{})}
	var err error
	if g.Executors, err = initialExecutors(conf); err != nil {
		return g, err
	}
	cpu, key := "1", keyExecutorCores
	if v, from, ok := sparkValue(conf, keyRequestCores, lineOf(spark3)); ok {
		cpu, key = strings.TrimSpace(v), from
	} else if v, from, ok := sparkValue(conf, keyExecutorCores, lineOf(spark3)); ok {
		cpu, key = strings.TrimSpace(v), from
	}
	q, err := resource.ParseQuantity(cpu)
	if err != nil || q.Sign() <= 0 {
		return g, fmt.Errorf("%s=%q is not a positive CPU quantity such as 1 or 500m", key, cpu)
	}
	m, err := ExecutorMemoryOf(conf, spark3)
	if err != nil {
		return g, err
	}
	g.Executor = corev1.ResourceList{
		corev1.ResourceCPU:    q,
		corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", m.Total())),
	}
	for name, q := range executorExtendedResources(conf) {
		g.Executor[name] = q
	}
	return g, nil
}

// initialExecutors is the executor count Spark requests at start.
func initialExecutors(conf map[string]string) (int, error) {
	count := func(key string, def int) (int, error) {
		v, ok := conf[key]
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q is not a whole number of executors", key, v)
		}
		return n, nil
	}
	if !strings.EqualFold(strings.TrimSpace(conf["spark.dynamicAllocation.enabled"]), "true") {
		return count("spark.executor.instances", sparkDefaultExecutors)
	}
	minimum, err := count("spark.dynamicAllocation.minExecutors", 0)
	if err != nil {
		return 0, err
	}
	initial, err := count("spark.dynamicAllocation.initialExecutors", minimum)
	if err != nil {
		return 0, err
	}
	instances, err := count("spark.executor.instances", 0)
	if err != nil {
		return 0, err
	}
	return max(minimum, initial, instances), nil
}

// executorExtendedResources are the spark.executor.resource.<name>.amount
// keys that name a vendor, as <vendor>/<name> quantities; keys Spark would
// refuse are left to Spark.
func executorExtendedResources(conf map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		rest, ok := strings.CutPrefix(k, "spark.executor.resource.")
		if !ok {
			continue
		}
		name, ok := strings.CutSuffix(rest, ".amount")
		if !ok {
			continue
		}
		vendor := strings.TrimSpace(conf["spark.executor.resource."+name+".vendor"])
		q, err := resource.ParseQuantity(strings.TrimSpace(conf[k]))
		if vendor == "" || err != nil {
			continue
		}
		out[corev1.ResourceName(vendor+"/"+name)] = q
	}
	return out
}

// Exceeds lists the resources of have that are larger than in limit, as
// "cpu 2 > 1" strings; empty when have fits.
func Exceeds(have, limit corev1.ResourceList) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		q := have[name]
		l, ok := limit[name]
		if q.Sign() > 0 && (!ok || q.Cmp(l) > 0) {
			out = append(out, fmt.Sprintf("%s %s > %s", name, q.String(), l.String()))
		}
	}
	return out
}
