package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// writeObject answers with one Kubernetes object as JSON.
func writeObject(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

// writeError answers with the metav1.Status of an apierrors error; any
// other error is an internal one.
func writeError(w http.ResponseWriter, err error) {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeObject(w, code, &s)
}

// writeSuccess answers with a Status of Success, as a collection delete
// does.
func writeSuccess(w http.ResponseWriter) {
	writeObject(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
}

// withKind returns a copy of a pod with its kind set, as the API server
// sends it.
func withKind(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	return out
}

// statusRecorder keeps the status code written, for the request metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

// Flush lets watch streams through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets WebSocket upgrades through the recorder.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("connection cannot be hijacked")
	}
	s.code = http.StatusSwitchingProtocols
	return h.Hijack()
}

// addWarnings adds one Warning header per warning, as the API server
// does (AddWarning in k8s.io/apiserver v0.37.2,
// pkg/endpoints/filters/warning.go): code 299, agent "-", the text
// quoted; a text a header cannot carry (control characters) is left out.
// kubectl prints them; fabric8 (OperationSupport.assertResponseCode,
// v6.7.2 and v7.1.0) logs them at DEBUG, as Spark sets no fieldValidation,
// so the JVM's user reads them in the driver pod's Events.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, text := range warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			w.Header().Add("Warning", h)
		}
	}
}
