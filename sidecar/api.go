package sidecar

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"

	"github.com/sparklet/sparklet/internal/kubecore"
)

// fieldManager names the sidecar on every write it makes.
const fieldManager = "sparklet-sidecar"

// API is the Kubernetes API the JVM sees on 127.0.0.1. Every request needs
// the per-pod token; everything is scoped to one namespace and one
// application. Reads come from the informer cache.
type API struct {
	namespace string
	apps      *apps  // the application the JVM runs
	driver    string // the driver pod's name
	token     []byte
	client    kubecore.Interface
	state     *state
	alloc     *allocator
	keeper    *keeper // failed executors kept for their logs
	metrics   *metrics
	log       *logrus.Entry
	server    *version.Info
}

// ServeHTTP authenticates, routes and answers with Kubernetes objects or a
// metav1.Status, and counts the request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := parseRequest(r)
	if !a.authenticated(r) {
		a.metrics.jvmRequests.WithLabelValues(metricLabel(metricVerbs, req.verb), "", "401").Inc()
		writeError(w, apierrors.NewUnauthorized("a bearer token is required: the JVM reads it from spark.kubernetes.authenticate.oauthTokenFile"))
		return
	}
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	resource := a.route(rec, req)
	a.metrics.jvmRequests.WithLabelValues(metricLabel(metricVerbs, req.verb), metricLabel(metricResources, resource), fmt.Sprint(rec.code)).Inc()
}

func (a *API) authenticated(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), a.token) == 1
}
