package sidecar

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxBody caps what the JVM may send in one request.
const maxBody = 4 << 20

// request is one JVM request, parsed once: the Kubernetes verb and, for
// /api/v1/namespaces/{namespace}/{resource}[/{name}], what it addresses.
type request struct {
	*http.Request
	verb       string
	namespaced bool // the path has the form above
	namespace  string
	resource   string
	name       string
	query      url.Values
}

func parseRequest(r *http.Request) *request {
	req := &request{Request: r, query: r.URL.Query()}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) >= 5 && len(parts) <= 6 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" {
		req.namespaced, req.namespace, req.resource = true, parts[3], parts[4]
		if len(parts) == 6 {
			req.name = parts[5]
		}
	}
	// A collection is /api/v1/namespaces/{namespace}/{resource}, or a path
	// that stops at the namespace.
	collection := len(parts) == 5 || !strings.Contains(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	req.verb = verbOf(r.Method, collection, isTrue(req.query.Get("watch")))
	return req
}

// verbOf names a request's verb as the API server's authorizer does.
func verbOf(method string, collection, watch bool) string {
	switch method {
	case http.MethodGet:
		switch {
		case watch:
			return "watch"
		case collection:
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodDelete:
		if collection {
			return "deletecollection"
		}
		return "delete"
	case http.MethodPatch:
		return "patch"
	case http.MethodPut:
		return "update"
	}
	return strings.ToLower(method)
}

// isTrue parses a boolean query parameter as the API server does (python
// sends "True").
func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// selectors parses the request's label and field selectors.
func (r *request) selectors() (selectors, error) {
	return parseSelectors(r.query.Get("labelSelector"), r.query.Get("fieldSelector"))
}

// patchType is the patch type named by the Content-Type header.
func (r *request) patchType() types.PatchType {
	return types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
}

func (r *request) body() ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return body, nil
}

// decode reads a JSON object from the body.
func (r *request) decode(into any) error {
	body, err := r.body()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, into); err != nil {
		return apierrors.NewBadRequest("request body: " + err.Error())
	}
	return nil
}

// deleteOptions reads the optional DeleteOptions body.
func (r *request) deleteOptions() (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, err := r.body()
	if err != nil {
		return opts, err
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, apierrors.NewBadRequest("DeleteOptions body: " + err.Error())
		}
	}
	opts.TypeMeta = metav1.TypeMeta{}
	return opts, nil
}
