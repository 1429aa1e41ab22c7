package main

import (
	"net/http"
	"strings"
	"sync"
)

// requestsByResource sums apiserver_request_total by resource (with its
// group and subresource) and verb, keyed as requestKey spells them.
// Non-resource requests (/metrics, discovery) are left out.
func requestsByResource(ms []sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ms {
		if s.name != "apiserver_request_total" || s.labels["resource"] == "" {
			continue
		}
		out[requestKey(s.labels["resource"], s.labels["group"], s.labels["subresource"], s.labels["verb"])] += s.value
	}
	return out
}

// requestKey is "pods/log GET", "leases.coordination.k8s.io PUT": the
// resource, its group unless core, its subresource, and the verb as the
// API server's metrics name it.
func requestKey(resource, group, subresource, verb string) string {
	if group != "" {
		resource += "." + group
	}
	if subresource != "" {
		resource += "/" + subresource
	}
	return resource + " " + verb
}

// requestCounter is an http.RoundTripper that counts the resource
// requests its client sends, keyed as the API server's metrics key them
// (requestKey), so that a bench can take its own requests out of the API
// server's counts.
type requestCounter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	counts map[string]float64
}

func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if key, ok := classify(req); ok {
		c.mu.Lock()
		c.counts[key]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

// snapshot copies the counts so far.
func (c *requestCounter) snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]float64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// connecters are the subresources whose requests the API server's
// metrics count as CONNECT whatever the method (k8s.io/apiserver
// pkg/endpoints/installer.go, v0.36: a rest.Connecter's routes).
var connecters = map[string]bool{"log": true, "exec": true, "attach": true, "portforward": true, "proxy": true}

// classify keys a request to /api/v1/... or /apis/<group>/<version>/...
// as the API server's request info does (k8s.io/apiserver
// pkg/endpoints/request/requestinfo.go, v0.36: GET of a collection is
// LIST, or WATCH with watch=true; DELETE of a collection is
// DELETECOLLECTION); ok is false for a non-resource path.
func classify(req *http.Request) (key string, ok bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource, name, sub := parts[0], "", ""
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	verb := req.Method
	switch {
	case connecters[sub]:
		verb = "CONNECT"
	case req.Method == http.MethodGet && name == "" && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case req.Method == http.MethodGet && name == "":
		verb = "LIST"
	case req.Method == http.MethodDelete && name == "":
		verb = "DELETECOLLECTION"
	}
	return requestKey(resource, group, sub, verb), true
}
