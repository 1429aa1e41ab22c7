package sidecar

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveRefusedPath answers with a 403 that says why, rather than a 404 that
// a Spark user would read as a broken cluster, the calls Spark makes for
// features sparklet cannot offer:
//
//   - /apis/apps/...: the statefulset allocator (StatefulSetPodsAllocator.scala,
//     Spark 3.3+) and the deployment allocator (DeploymentPodsAllocator.scala,
//     Spark 4.2+) POST a StatefulSet or Deployment whose controller would
//     create the executors, past the executor policy. The webhook refuses
//     those allocators; this answers a JVM that chose one at run time.
//   - pods/{name}/{subresource} other than resize (resize.go).
//
// It reports whether the request was one, with the resource to count it under.
func (a *API) serveRefusedPath(w http.ResponseWriter, req *request) (string, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) >= 2 && parts[0] == "apis" && parts[1] == "apps" {
		resource := "apps"
		if len(parts) >= 6 && parts[3] == "namespaces" {
			resource = parts[5]
		}
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: resource}, "", fmt.Errorf(
			"the sparklet sidecar creates executors itself, under the executor policy, and serves no StatefulSets or Deployments: "+
				"use Spark's default executor allocator, spark.kubernetes.allocation.pods.allocator=direct")))
		return "apps", true
	}
	if len(parts) == 7 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "pods" {
		sub := parts[6]
		if sub == "resize" {
			a.serveResize(w, req, parts[3], parts[5])
			return "pods", true
		}
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/" + sub}, parts[5],
			fmt.Errorf("the sparklet sidecar serves no pods/%s subresource", sub)))
		return "pods/" + sub, true
	}
	return "", false
}
