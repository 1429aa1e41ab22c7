package sidecar

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// route serves one request and returns the resource it addressed.
func (a *API) route(w http.ResponseWriter, req *request) string {
	if resource, ok := a.serveDiscovery(w, req); ok {
		return resource
	}
	if resource, ok := a.servePodMetrics(w, req); ok {
		return resource
	}
	if resource, ok := a.serveRefusedPath(w, req); ok {
		return resource
	}
	if !req.namespaced {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, req.URL.Path))
		return "other"
	}
	if req.namespace != a.namespace {
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: req.resource}, req.name,
			fmt.Errorf("this sidecar serves only namespace %q, the driver's", a.namespace)))
		return req.resource
	}
	switch req.resource {
	case "pods":
		a.servePods(w, req)
	case "configmaps", "persistentvolumeclaims", "services":
		a.servePassThrough(w, req)
	default:
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: req.resource}, req.name,
			fmt.Errorf("the sparklet sidecar serves Spark's pods, configmaps, persistentvolumeclaims and services only")))
	}
	return req.resource
}
