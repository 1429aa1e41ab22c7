package webhook

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendReview appends resp, encoded in an AdmissionReview, to b. An
// answer that is allowed, with or without a patch, is written directly,
// which saves reflecting over the types and copying the patch once more;
// any other goes through json.Marshal. Both write the same JSON.
func appendReview(b []byte, tm metav1.TypeMeta, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	if !resp.Allowed || resp.Result != nil || len(resp.AuditAnnotations) > 0 || len(resp.Warnings) > 0 {
		data, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: tm, Response: resp})
		return append(b, data...), err
	}
	kind, err := json.Marshal(tm.Kind)
	if err != nil {
		return nil, err
	}
	apiVersion, err := json.Marshal(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	uid, err := json.Marshal(string(resp.UID))
	if err != nil {
		return nil, err
	}
	b = slices.Grow(b, 128+len(kind)+len(apiVersion)+len(uid)+base64.StdEncoding.EncodedLen(len(resp.Patch)))
	b = append(b, `{"kind":`...)
	b = append(b, kind...)
	b = append(b, `,"apiVersion":`...)
	b = append(b, apiVersion...)
	b = append(b, `,"response":{"uid":`...)
	b = append(b, uid...)
	b = append(b, `,"allowed":true`...)
	if len(resp.Patch) > 0 {
		b = append(b, `,"patch":"`...)
		b = base64.StdEncoding.AppendEncode(b, resp.Patch)
		b = append(b, '"')
	}
	if resp.PatchType != nil {
		pt, err := json.Marshal(*resp.PatchType)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"patchType":`...), pt...)
	}
	return append(b, "}}"...), nil
}
