package sidecar

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podMetricsGR = schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}

// servePodMetrics answers GET /apis/metrics.k8s.io/v1beta1/namespaces/
// {namespace}/pods/{name} for this application's executors, from the API
// server (metrics-server, where the cluster runs one): Spark's
// ExecutorResizePlugin reads an executor's memory usage there, through
// fabric8's top().pods().metrics(namespace, name) (4.3.0 jar;
// PodMetricOperationsImpl, fabric8 v7.6.1). It reports whether the request
// was one.
func (a *API) servePodMetrics(w http.ResponseWriter, req *request) (string, bool) {
	rest, ok := strings.CutPrefix(req.URL.Path, "/apis/metrics.k8s.io/")
	if !ok {
		return "", false
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 5 || parts[0] != "v1beta1" || parts[1] != "namespaces" || parts[3] != "pods" || req.Method != http.MethodGet {
		writeError(w, apierrors.NewForbidden(podMetricsGR, "", errMetricsScope))
		return "other", true
	}
	namespace, name := parts[2], parts[4]
	if namespace != a.namespace {
		writeError(w, apierrors.NewForbidden(podMetricsGR, name, errMetricsScope))
		return "other", true
	}
	if _, err := a.state.executor(name); err != nil {
		writeError(w, apierrors.NewNotFound(podMetricsGR, name))
		return "other", true
	}
	body, err := a.client.PodMetrics(req.Context(), namespace, name)
	if err != nil {
		writeError(w, err)
		return "other", true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return "other", true
}

var errMetricsScope = errors.New("the sparklet sidecar serves the metrics of this application's executors only: " +
	"GET /apis/metrics.k8s.io/v1beta1/namespaces/<the driver's namespace>/pods/<executor>")
