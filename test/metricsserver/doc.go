// Package metricsserver runs metrics-server (hack/metricsserver) as a local
// process beside the control plane of a real node: it scrapes the node's
// kubelet (/metrics/resource) and the API server serves its
// metrics.k8s.io/v1beta1 through the aggregation layer, as in a cluster
// where metrics-server is installed.
package metricsserver
