package main

import (
	"net/http"
	"testing"
)

// The bench's own requests must be keyed as the API server's metrics key
// them, or they would not be taken away from its counts.
func TestClassifyMatchesMetrics(t *testing.T) {
	for _, c := range []struct {
		method, url, want string
	}{
		{"GET", "https://h/api/v1/namespaces/ns/pods?watch=true&resourceVersion=1", "pods WATCH"},
		{"GET", "https://h/api/v1/namespaces/ns/pods", "pods LIST"},
		{"GET", "https://h/api/v1/namespaces/ns/pods/p", "pods GET"},
		{"GET", "https://h/api/v1/namespaces/ns/pods/p/log?container=spark", "pods/log CONNECT"},
		{"DELETE", "https://h/api/v1/namespaces/ns/pods/p", "pods DELETE"},
		{"DELETE", "https://h/api/v1/namespaces/ns/pods", "pods DELETECOLLECTION"},
		{"POST", "https://h/api/v1/namespaces", "namespaces POST"},
		{"GET", "https://h/api/v1/namespaces/ns", "namespaces GET"},
		{"POST", "https://h/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles", "roles.rbac.authorization.k8s.io POST"},
		{"PUT", "https://h/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "leases.coordination.k8s.io PUT"},
		{"GET", "https://h/metrics", ""},
		{"GET", "https://h/apis", ""},
	} {
		req, err := http.NewRequest(c.method, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := classify(req)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.url, got, c.want)
		}
	}
	ms := parseMetrics(`apiserver_request_total{code="200",group="coordination.k8s.io",resource="leases",subresource="",verb="PUT"} 4
apiserver_request_total{code="200",group="",resource="pods",subresource="log",verb="CONNECT"} 2
apiserver_request_total{code="404",group="",resource="pods",subresource="log",verb="CONNECT"} 1
apiserver_request_total{code="200",group="",resource="",subresource="",verb="GET"} 9
`)
	got := requestsByResource(ms)
	if len(got) != 2 || got["leases.coordination.k8s.io PUT"] != 4 || got["pods/log CONNECT"] != 3 {
		t.Errorf("requestsByResource = %v, want leases PUT 4 and pods/log CONNECT 3 (every code; non-resource left out)", got)
	}
}
