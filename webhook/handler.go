// Package webhook is sparklet's mutating admission webhook: a thin adapter
// that turns an AdmissionReview for a pod into patches.Driver's result.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/podpatch"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// MaxBodyBytes caps a request body; the API server sends at most about 3 MiB.
const MaxBodyBytes = 7 << 20

var podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

// Handler answers AdmissionReview requests for pods.
type Handler struct {
	policy  func() *policy.Policy
	metrics *metrics
	log     *logrus.Entry
	appID   string // fixed application id for tests; empty generates one
}

// ServeHTTP checks and decodes the request, calls admit once and always
// answers with an AdmissionReview, echoing the caller's apiVersion, kind
// and request UID.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > MaxBodyBytes {
		http.Error(w, fmt.Sprintf("body larger than %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	review := admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		if err == nil {
			err = errors.New("no request in the AdmissionReview")
		}
		h.write(w, review.TypeMeta, errorResponse(http.StatusBadRequest, "decode AdmissionReview: "+err.Error()))
		return
	}
	resp := h.safeAdmit(review.Request)
	resp.UID = review.Request.UID
	h.write(w, review.TypeMeta, resp)
	h.metrics.duration.Observe(time.Since(start).Seconds())
}

func (h *Handler) write(w http.ResponseWriter, tm metav1.TypeMeta, resp *admissionv1.AdmissionResponse) {
	if tm.APIVersion == "" {
		tm.APIVersion = "admission.k8s.io/v1"
	}
	if tm.Kind == "" {
		tm.Kind = "AdmissionReview"
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: tm, Response: resp})
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// safeAdmit turns a panic into an error result, so one bad pod cannot take
// the webhook down.
func (h *Handler) safeAdmit(req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil {
			h.log.WithFields(logrus.Fields{"uid": req.UID, "panic": fmt.Sprint(p)}).Error("admission panicked")
			h.metrics.admissions.WithLabelValues("error", "panic").Inc()
			resp = errorResponse(http.StatusInternalServerError, fmt.Sprintf("sparklet webhook internal error: %v", p))
		}
	}()
	return h.admit(req)
}

// admit decides one request.
func (h *Handler) admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	log := h.log.WithFields(logrus.Fields{"uid": req.UID, "namespace": req.Namespace, "operation": req.Operation,
		"dryRun": req.DryRun != nil && *req.DryRun})
	if req.Resource != podResource || req.SubResource != "" || req.Operation != admissionv1.Create {
		h.metrics.admissions.WithLabelValues("skipped", "not a pod create").Inc()
		log.Info("skipped: not a pod create")
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	}
	skipped := ""
	var name string
	ops, err := podpatch.Mutate(req.Object.Raw, func(pod *corev1.Pod) error {
		name = pod.Name
		if name == "" {
			name = pod.GenerateName
		}
		log = log.WithField("name", name)
		log.WithField("pod", string(req.Object.Raw)).Debug("request")
		var err error
		skipped, err = patches.Driver(pod, patches.Input{Namespace: req.Namespace, Policy: h.policy().For(req.Namespace), Version: version.Version, AppID: h.appID})
		return err
	})
	var refused *patches.Refused
	switch {
	case errors.As(err, &refused):
		h.metrics.admissions.WithLabelValues("refused", refused.Reason).Inc()
		log.WithField("reason", refused.Reason).Info("refused: " + refused.Message)
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: refused.Message,
		}}
	case err != nil:
		h.metrics.admissions.WithLabelValues("error", "bad pod").Inc()
		log.WithError(err).Info("error")
		return errorResponse(http.StatusBadRequest, err.Error())
	case skipped != "":
		h.metrics.admissions.WithLabelValues("skipped", skipped).Inc()
		log.Info("skipped: " + skipped)
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	case len(ops) == 0:
		h.metrics.admissions.WithLabelValues("skipped", "already injected").Inc()
		log.Info("skipped: already injected")
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		h.metrics.admissions.WithLabelValues("error", "encode patch").Inc()
		return errorResponse(http.StatusInternalServerError, "encode patch: "+err.Error())
	}
	h.metrics.admissions.WithLabelValues("injected", "").Inc()
	log.WithField("ops", len(ops)).Info("injected")
	log.WithField("patch", string(patch)).Debug("response")
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: patch, PatchType: &pt}
}

func errorResponse(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg,
	}}
}
