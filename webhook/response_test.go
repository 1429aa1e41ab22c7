package webhook

import (
	"encoding/json"
	"reflect"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEncodeReviewMatchesJSON: the direct encoding of an allowed answer
// decodes to what json.Marshal's does.
func TestEncodeReviewMatchesJSON(t *testing.T) {
	pt := admissionv1.PatchTypeJSONPatch
	tm := metav1.TypeMeta{APIVersion: "admission.k8s.io/v1beta1", Kind: "AdmissionReview"}
	for _, resp := range []*admissionv1.AdmissionResponse{
		{UID: "u-1", Allowed: true},
		{UID: `q"<&>\é`, Allowed: true, Patch: []byte(`[{"op":"add","path":"/a","value":1}]`), PatchType: &pt},
		{UID: "u-3", Allowed: false, Result: &metav1.Status{Code: 403, Message: "no"}},
		{UID: "u-4", Allowed: true, Warnings: []string{"w"}},
	} {
		got, err := appendReview(nil, tm, resp)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: tm, Response: resp})
		var g, w map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("invalid JSON %s: %v", got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("encodeReview = %s\njson.Marshal = %s", got, want)
		}
	}
}
