package webhook

import (
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// admissionReview is the part of an AdmissionReview the webhook reads.
// Decoding only it leaves the rest of the request (userInfo, options,
// oldObject, the kinds) to be scanned, not decoded.
type admissionReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *admissionRequest `json:"request,omitempty"`
}

// admissionRequest is the part of an admissionv1.AdmissionRequest the
// webhook reads, with the same JSON names and types.
type admissionRequest struct {
	UID         types.UID                   `json:"uid"`
	Resource    metav1.GroupVersionResource `json:"resource"`
	SubResource string                      `json:"subResource,omitempty"`
	Namespace   string                      `json:"namespace,omitempty"`
	Operation   admissionv1.Operation       `json:"operation"`
	DryRun      *bool                       `json:"dryRun,omitempty"`
	Object      runtime.RawExtension        `json:"object,omitempty"`
}
