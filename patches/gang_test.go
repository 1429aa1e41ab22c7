package patches

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestGangOf checks the gang's sizes against Spark's rules, case by case
// (the sources are cited on GangOf and ExecutorMemoryOf).
func TestGangOf(t *testing.T) {
	cases := []struct {
		name      string
		conf      map[string]string
		spark3    bool
		executors int
		cpu, mem  string
		extra     map[string]string
		err       string
	}{
		{name: "Spark's defaults: 2 executors of 1 core, 1g heap + 384m overhead", executors: 2, cpu: "1", mem: "1408Mi"},
		{name: "instances", conf: map[string]string{"spark.executor.instances": "5"}, executors: 5, cpu: "1", mem: "1408Mi"},
		{name: "dynamic allocation without bounds starts at 0",
			conf: map[string]string{"spark.dynamicAllocation.enabled": "true"}, executors: 0, cpu: "1", mem: "1408Mi"},
		{name: "dynamic allocation: initialExecutors defaults to minExecutors",
			conf: map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.minExecutors": "3"}, executors: 3, cpu: "1", mem: "1408Mi"},
		{name: "dynamic allocation: the largest of min, initial and instances",
			conf: map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.minExecutors": "1",
				"spark.dynamicAllocation.initialExecutors": "4", "spark.executor.instances": "2"}, executors: 4, cpu: "1", mem: "1408Mi"},
		{name: "dynamic allocation: instances above initial",
			conf: map[string]string{"spark.dynamicAllocation.enabled": "TRUE", "spark.dynamicAllocation.initialExecutors": "1", "spark.executor.instances": "6"}, executors: 6, cpu: "1", mem: "1408Mi"},
		{name: "cores", conf: map[string]string{"spark.executor.cores": "4"}, executors: 2, cpu: "4", mem: "1408Mi"},
		{name: "request.cores wins over cores", conf: map[string]string{"spark.executor.cores": "4", "spark.kubernetes.executor.request.cores": "500m"}, executors: 2, cpu: "500m", mem: "1408Mi"},
		{name: "factor over the minimum", conf: map[string]string{"spark.executor.memory": "8g"}, executors: 2, cpu: "1", mem: "9011Mi"},
		{name: "overhead set", conf: map[string]string{"spark.executor.memory": "2g", "spark.executor.memoryOverhead": "1g"}, executors: 2, cpu: "1", mem: "3072Mi"},
		{name: "4.x minMemoryOverhead", conf: map[string]string{"spark.executor.minMemoryOverhead": "1g"}, executors: 2, cpu: "1", mem: "2048Mi"},
		{name: "3.x has no minMemoryOverhead", conf: map[string]string{"spark.executor.minMemoryOverhead": "1g"}, spark3: true, executors: 2, cpu: "1", mem: "1408Mi"},
		{name: "off-heap", conf: map[string]string{"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "512m"}, executors: 2, cpu: "1", mem: "1920Mi"},
		{name: "a GPU with its vendor", conf: map[string]string{"spark.executor.resource.gpu.amount": "1", "spark.executor.resource.gpu.vendor": "nvidia.com"},
			executors: 2, cpu: "1", mem: "1408Mi", extra: map[string]string{"nvidia.com/gpu": "1"}},
		{name: "a resource without a vendor is left to Spark", conf: map[string]string{"spark.executor.resource.gpu.amount": "1"}, executors: 2, cpu: "1", mem: "1408Mi"},
		{name: "bad instances", conf: map[string]string{"spark.executor.instances": "two"}, err: "spark.executor.instances"},
		{name: "bad minExecutors", conf: map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.minExecutors": "-1"}, err: "spark.dynamicAllocation.minExecutors"},
		{name: "bad request.cores", conf: map[string]string{"spark.kubernetes.executor.request.cores": "lots"}, err: "spark.kubernetes.executor.request.cores"},
		{name: "zero cores", conf: map[string]string{"spark.executor.cores": "0"}, err: "spark.executor.cores"},
		{name: "bad memory", conf: map[string]string{"spark.executor.memory": "1q"}, err: "spark.executor.memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := GangOf(&corev1.Pod{}, tc.conf, tc.spark3)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Executors != tc.executors {
				t.Errorf("executors %d, want %d", g.Executors, tc.executors)
			}
			want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.cpu), corev1.ResourceMemory: resource.MustParse(tc.mem)}
			for k, v := range tc.extra {
				want[corev1.ResourceName(k)] = resource.MustParse(v)
			}
			if len(g.Executor) != len(want) {
				t.Errorf("executor %v, want %v", g.Executor, want)
			}
			for k, v := range want {
				if got := g.Executor[k]; got.Cmp(v) != 0 {
					t.Errorf("executor %s = %s, want %s", k, got.String(), v.String())
				}
			}
		})
	}
}

// TestGangDriverCountsSidecarsAndInitContainers: the driver's member is
// what the scheduler counts: regular containers plus native sidecars,
// or the largest init container when that is more.
func TestGangDriverCountsSidecarsAndInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	req := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "fetch", Resources: req("2", "64Mi")},
			{Name: "sidecar", RestartPolicy: &always, Resources: req("100m", "64Mi")},
		},
		Containers: []corev1.Container{{Name: "spark", Resources: req("1", "2Gi")}},
	}}
	g, err := GangOf(pod, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := g.Driver[corev1.ResourceCPU], g.Driver[corev1.ResourceMemory]
	// cpu: max(init 2, sidecar 0.1 + spark 1) = 2; memory: max(64Mi, 64Mi + 2Gi).
	if cpu.Cmp(resource.MustParse("2")) != 0 || mem.Cmp(resource.MustParse("2112Mi")) != 0 {
		t.Fatalf("driver %s cpu, %s memory; want 2 and 2112Mi", cpu.String(), mem.String())
	}
}

func TestExceeds(t *testing.T) {
	limit := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1408Mi")}
	fits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	if got := Exceeds(fits, limit); len(got) != 0 {
		t.Errorf("a fitting pod exceeds: %v", got)
	}
	over := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"), "nvidia.com/gpu": resource.MustParse("1")}
	got := strings.Join(Exceeds(over, limit), "; ")
	if got != "cpu 2 > 1; nvidia.com/gpu 1 > 0" {
		t.Errorf("Exceeds = %q", got)
	}
}
