package metricsserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
)

// Usage is one container's usage in a PodMetrics, as metrics-server
// reports it: the memory is the container's working set.
type Usage struct {
	// Timestamp is when the kubelet took the sample.
	Timestamp time.Time
	Memory    int64
}

// podMetrics is the part of metrics.k8s.io/v1beta1 PodMetrics read here.
type podMetrics struct {
	Timestamp  time.Time `json:"timestamp"`
	Containers []struct {
		Name  string                       `json:"name"`
		Usage map[string]resource.Quantity `json:"usage"`
	} `json:"containers"`
}

// ContainerUsage reads the pod's PodMetrics through the API server (so
// through the aggregation layer, as Spark's plugin does through the
// sidecar) and returns container's usage. An error means no metrics yet,
// or none for container.
func ContainerUsage(ctx context.Context, client kubernetes.Interface, ns, pod, container string) (Usage, error) {
	path := fmt.Sprintf("/apis/metrics.k8s.io/v1beta1/namespaces/%s/pods/%s", ns, pod)
	body, err := client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return Usage{}, err
	}
	var pm podMetrics
	if err := json.Unmarshal(body, &pm); err != nil {
		return Usage{}, fmt.Errorf("decode %s: %w", path, err)
	}
	for _, c := range pm.Containers {
		if c.Name == container {
			mem := c.Usage["memory"]
			return Usage{Timestamp: pm.Timestamp, Memory: mem.Value()}, nil
		}
	}
	return Usage{}, fmt.Errorf("%s has no container %s", path, container)
}
