package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
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
	policy    func() *policy.Policy
	effective effectiveCache
	metrics   *metrics
	log       *logrus.Entry
}

// ServeHTTP checks and decodes the request, calls admit once and always
// answers with an AdmissionReview, echoing the caller's apiVersion, kind
// and request UID. A request it cannot take is answered the same way, with
// allowed false and the reason in the Status; the UID stays empty when the
// body did not yield one. As controller-runtime's Webhook.ServeHTTP does
// (pkg/webhook/admission/http.go, v0.24.1), the HTTP status is 200 and the
// Status carries the code: the API server reads the body of a 200 only.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	review, refusal := decodeReview(r)
	if refusal != nil {
		if review.Request != nil {
			refusal.UID = review.Request.UID
		}
		h.log.WithFields(logrus.Fields{"uid": refusal.UID, "code": refusal.Result.Code}).Info("bad request: " + refusal.Result.Message)
		h.write(w, review.TypeMeta, refusal)
		return
	}
	patch := getBuffer()
	defer putBuffer(patch)
	resp := h.safeAdmit(review.Request, patch)
	resp.UID = review.Request.UID
	h.write(w, review.TypeMeta, resp)
	h.metrics.duration.Observe(time.Since(start).Seconds())
}

// decodeReview checks and decodes the request. A non-nil response is the
// error to answer with; the review then holds what could be read of the
// caller's apiVersion, kind and request UID.
func decodeReview(r *http.Request) (admissionReview, *admissionv1.AdmissionResponse) {
	review := admissionReview{}
	if r.Method != http.MethodPost {
		return review, errorResponse(http.StatusMethodNotAllowed, "POST an AdmissionReview")
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return review, errorResponse(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	body, err := readBody(r)
	if err != nil {
		return review, errorResponse(http.StatusBadRequest, "read body: "+err.Error())
	}
	if len(body) > MaxBodyBytes {
		return review, errorResponse(http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBodyBytes))
	}
	// On a type error, encoding/json still fills the fields it could read,
	// so a request UID that arrived is echoed.
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		if err == nil {
			err = errors.New("no request in the AdmissionReview")
		}
		return review, errorResponse(http.StatusBadRequest, "decode AdmissionReview: "+err.Error())
	}
	return review, nil
}

// readBody reads at most MaxBodyBytes+1 bytes of the body, into a buffer
// of the announced length when there is one.
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= MaxBodyBytes {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, MaxBodyBytes+1))
	return buf.Bytes(), err
}

// write sends resp in an AdmissionReview. Should encoding fail, it still
// answers with one, carrying a 500 Status.
func (h *Handler) write(w http.ResponseWriter, tm metav1.TypeMeta, resp *admissionv1.AdmissionResponse) {
	if tm.APIVersion == "" {
		tm.APIVersion = "admission.k8s.io/v1"
	}
	if tm.Kind == "" {
		tm.Kind = "AdmissionReview"
	}
	buf := getBuffer()
	defer putBuffer(buf)
	out, err := appendReview(*buf, tm, resp)
	*buf = out
	if err != nil {
		h.log.WithError(err).Error("encode response")
		failed := errorResponse(http.StatusInternalServerError, "encode response: "+err.Error())
		failed.UID = resp.UID
		out, _ = json.Marshal(admissionv1.AdmissionReview{TypeMeta: tm, Response: failed})
	}
	// A length lets net/http send the answer as it is, not in chunks,
	// which saves a write to the connection for a patch of some KiB.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// safeAdmit turns a panic into an error result, so one bad pod cannot take
// the webhook down.
func (h *Handler) safeAdmit(req *admissionRequest, patch *[]byte) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil {
			h.log.WithFields(logrus.Fields{"uid": req.UID, "panic": fmt.Sprint(p)}).Error("admission panicked")
			h.metrics.admissions.WithLabelValues("error", reasonPanic).Inc()
			resp = errorResponse(http.StatusInternalServerError, fmt.Sprintf("sparklet webhook internal error: %v", p))
		}
	}()
	return h.admit(req, patch)
}

// admit decides one request. The warnings the injection gave go with
// whatever it answers, so kubectl shows them. A patch is encoded into
// patch, which the caller reuses once the answer is written.
func (h *Handler) admit(req *admissionRequest, patch *[]byte) *admissionv1.AdmissionResponse {
	log := h.log.WithFields(logrus.Fields{"uid": req.UID, "namespace": req.Namespace, "operation": req.Operation,
		"dryRun": req.DryRun != nil && *req.DryRun})
	if req.Resource != podResource || req.SubResource != "" || req.Operation != admissionv1.Create {
		h.metrics.admissions.WithLabelValues("skipped", reasonNotPodCreate).Inc()
		log.Info("skipped: not a pod create")
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	}
	pol := h.policy()
	if pol == nil {
		// Not ready, so normally not called; a direct call still fails closed.
		h.metrics.admissions.WithLabelValues("error", reasonNoPolicy).Inc()
		log.Error("refused: no valid policy loaded")
		return errorResponse(http.StatusServiceUnavailable, "the sparklet webhook has no valid policy loaded; see its log or run sparklet policy validate on the policy file")
	}
	var res patches.Result
	var name string
	ops, err := podpatch.Mutate(req.Object.Raw, func(pod *corev1.Pod) error {
		name = pod.Name
		if name == "" {
			name = pod.GenerateName
		}
		log = log.WithField("name", name)
		if log.Logger.IsLevelEnabled(logrus.DebugLevel) {
			log.WithField("pod", string(req.Object.Raw)).Debug("request")
		}
		in := patches.Input{Namespace: req.Namespace, Version: version.Version}
		var err error
		if in.Policy, in.PolicyJSON, err = h.effective.get(pol, req.Namespace); err != nil {
			return err
		}
		res, err = patches.Driver(pod, in)
		return err
	})
	var refused *patches.Refused
	switch {
	case errors.As(err, &refused):
		h.metrics.admissions.WithLabelValues("refused", refusalReason(refused.Reason)).Inc()
		log.WithField("reason", refused.Reason).Info("refused: " + refused.Message)
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Warnings: res.Warnings, Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: refused.Message,
		}}
	case err != nil:
		h.metrics.admissions.WithLabelValues("error", reasonBadPod).Inc()
		log.WithError(err).Info("error")
		return errorResponse(http.StatusBadRequest, err.Error())
	case res.Skipped != nil:
		h.metrics.admissions.WithLabelValues("skipped", res.Skipped.Reason).Inc()
		log.WithField("reason", res.Skipped.Reason).Info("skipped: " + res.Skipped.Message)
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Warnings: res.Warnings}
	case len(ops) == 0:
		h.metrics.admissions.WithLabelValues("skipped", reasonAlreadyInjected).Inc()
		log.Info("skipped: already injected")
		return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Warnings: res.Warnings}
	}
	encoded, err := podpatch.AppendEncode(*patch, ops)
	*patch = encoded
	if err != nil {
		h.metrics.admissions.WithLabelValues("error", reasonEncodePatch).Inc()
		return errorResponse(http.StatusInternalServerError, "encode patch: "+err.Error())
	}
	h.metrics.admissions.WithLabelValues("injected", reasonNone).Inc()
	log.WithField("ops", len(ops)).Info("injected")
	if log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		log.WithField("patch", string(encoded)).Debug("response")
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: encoded, PatchType: &pt, Warnings: res.Warnings}
}

func errorResponse(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg,
	}}
}
