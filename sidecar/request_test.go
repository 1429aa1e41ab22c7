package sidecar

import (
	"net/http/httptest"
	"testing"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target                  string
		verb, namespace, resource, name string
		namespaced                      bool
	}{
		{"GET", "/api/v1/namespaces/spark/pods", "list", "spark", "pods", "", true},
		{"GET", "/api/v1/namespaces/spark/pods/", "list", "spark", "pods", "", true},
		{"GET", "/api/v1/namespaces/spark/pods?watch=True", "watch", "spark", "pods", "", true},
		{"GET", "/api/v1/namespaces/spark/pods/pi", "get", "spark", "pods", "pi", true},
		{"POST", "/api/v1/namespaces/spark/pods", "create", "spark", "pods", "", true},
		{"DELETE", "/api/v1/namespaces/spark/configmaps", "deletecollection", "spark", "configmaps", "", true},
		{"DELETE", "/api/v1/namespaces/spark/pods/pi-exec-1", "delete", "spark", "pods", "pi-exec-1", true},
		{"PATCH", "/api/v1/namespaces/spark/pods/pi-exec-1", "patch", "spark", "pods", "pi-exec-1", true},
		{"PUT", "/api/v1/namespaces/spark/pods/pi-exec-1", "update", "spark", "pods", "pi-exec-1", true},
		{"GET", "/api/v1/namespaces/spark/pods/pi/log", "get", "", "", "", false},
		{"GET", "/api/v1/namespaces/spark", "list", "", "", "", false},
		{"GET", "/api/v1/nodes", "get", "", "", "", false},
		{"GET", "/version", "get", "", "", "", false},
	} {
		req := parseRequest(httptest.NewRequest(tc.method, tc.target, nil))
		if req.verb != tc.verb || req.namespaced != tc.namespaced || req.namespace != tc.namespace || req.resource != tc.resource || req.name != tc.name {
			t.Errorf("%s %s: verb=%q namespaced=%v namespace=%q resource=%q name=%q, want %q %v %q %q %q", tc.method, tc.target,
				req.verb, req.namespaced, req.namespace, req.resource, req.name, tc.verb, tc.namespaced, tc.namespace, tc.resource, tc.name)
		}
	}
}
