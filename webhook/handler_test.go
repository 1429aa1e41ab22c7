package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/policy"
)

// serve sends one request to h and returns the recorded answer.
func serve(h http.Handler, method, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/mutate-pods", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestRequestChecks: a request the webhook cannot take still gets an
// AdmissionReview, with HTTP 200 as the API server expects, allowed false,
// and the HTTP code of the problem in its Status.
func TestRequestChecks(t *testing.T) {
	h := testHandler(t)
	cases := []struct {
		name, method, contentType string
		body                      []byte
		status                    int
		message                   string
	}{
		{"GET", http.MethodGet, "application/json", nil, http.StatusMethodNotAllowed, "POST an AdmissionReview"},
		{"wrong content type", http.MethodPost, "text/plain", []byte("{}"), http.StatusUnsupportedMediaType, "Content-Type must be application/json"},
		{"no content type", http.MethodPost, "", review(fixtureJSON(t, "testdata/minimal.pod.yaml")), http.StatusUnsupportedMediaType, "Content-Type must be application/json"},
		{"oversize body", http.MethodPost, "application/json", bytes.Repeat([]byte(" "), MaxBodyBytes+1), http.StatusRequestEntityTooLarge, "body larger than 7340032 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(h, tc.method, tc.contentType, tc.body)
			if rec.Code != http.StatusOK {
				t.Errorf("HTTP status = %d, want 200 with the problem in the AdmissionReview", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("not an AdmissionReview: %q", rec.Body.String())
			}
			if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
				t.Errorf("answered %s %s", out.APIVersion, out.Kind)
			}
			resp := out.Response
			if resp.Allowed || resp.Result == nil || resp.Result.Code != int32(tc.status) || resp.Result.Message != tc.message || resp.Result.Status != metav1.StatusFailure {
				t.Errorf("response = %+v %+v, want allowed false, code %d, message %q", resp, resp.Result, tc.status, tc.message)
			}
			if resp.UID != "" || len(resp.Patch) > 0 {
				t.Errorf("uid %q, patch %s; want neither", resp.UID, resp.Patch)
			}
		})
	}
}

// TestBadBodies: a body that does not decode is answered with a 400 in an
// AdmissionReview; the request UID is echoed when it could be read and is
// empty when not.
func TestBadBodies(t *testing.T) {
	h := testHandler(t)
	for _, tc := range []struct {
		name, body, uid, apiVersion, message string
	}{
		{"not JSON", "not json", "", "admission.k8s.io/v1", "decode AdmissionReview: invalid character 'o' in literal null"},
		{"truncated", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1"`, "", "admission.k8s.io/v1", "decode AdmissionReview: unexpected end of JSON input"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}`, "", "admission.k8s.io/v1beta1", "decode AdmissionReview: no request in the AdmissionReview"},
		{"request of the wrong type", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"x"}`, "", "admission.k8s.io/v1", "decode AdmissionReview: json: cannot unmarshal string into Go struct field admissionReview.request"},
		{"a field of the wrong type", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-2","operation":5}}`, "u-2", "admission.k8s.io/v1", "decode AdmissionReview: json: cannot unmarshal number into Go struct field admissionRequest.request.operation"},
		{"a null object", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-3","resource":{"version":"v1","resource":"pods"},"namespace":"spark-jobs","operation":"CREATE","object":null}}`, "u-3", "admission.k8s.io/v1", "decode pod: unexpected end of JSON input"},
		{"a broken member the webhook does not read", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-4","userInfo":{"groups":[1,}}}`, "", "admission.k8s.io/v1", "decode AdmissionReview: invalid character '}'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(h, http.MethodPost, "application/json", []byte(tc.body))
			if rec.Code != http.StatusOK {
				t.Errorf("HTTP status = %d, want 200", rec.Code)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("not an AdmissionReview: %q", rec.Body.String())
			}
			if out.APIVersion != tc.apiVersion || out.Kind != "AdmissionReview" {
				t.Errorf("answered %s %s, want %s AdmissionReview", out.APIVersion, out.Kind, tc.apiVersion)
			}
			resp := out.Response
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || !strings.HasPrefix(resp.Result.Message, tc.message) {
				t.Errorf("response = %+v %+v, want allowed false, code 400, message starting %q", resp, resp.Result, tc.message)
			}
			if resp.UID != types.UID(tc.uid) {
				t.Errorf("uid = %q, want %q", resp.UID, tc.uid)
			}
		})
	}
}

func TestGarbageGetsAnAdmissionReview(t *testing.T) {
	for _, body := range []string{"not json", `{"kind":"AdmissionReview"}`, `{"request":{"uid":"u","resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":"x"}}`} {
		resp := call(t, testHandler(t), []byte(body)).Response
		if resp.Allowed {
			t.Errorf("%s: allowed", body)
		}
	}
}

func TestEchoesCallerAndUID(t *testing.T) {
	body := bytes.Replace(review(fixtureJSON(t, "testdata/minimal.pod.yaml")), []byte(`"admission.k8s.io/v1"`), []byte(`"admission.k8s.io/v1beta1"`), 1)
	out := call(t, testHandler(t), body)
	if out.APIVersion != "admission.k8s.io/v1beta1" || out.Kind != "AdmissionReview" {
		t.Errorf("echoed %s %s", out.APIVersion, out.Kind)
	}
	if out.Response.UID != "0d7d3b0c-1111-4222-8333-444455556666" {
		t.Errorf("uid = %q", out.Response.UID)
	}
}

// TestAPIServersWholeReview: a review with every member kube-apiserver
// fills (userInfo, options, the request kinds, oldObject) is admitted as
// the bare one is: the webhook reads the members it needs and only scans
// the rest.
func TestAPIServersWholeReview(t *testing.T) {
	h := policyHandler(t, "testdata/policy.yaml")
	raw := fixtureJSON(t, "../examples/spark-pi-pod.yaml")
	want, refused := admitPod(t, h, raw)
	if refused != "" {
		t.Fatalf("refused: %s", refused)
	}
	dryRun := false
	whole, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:             "0d7d3b0c-1111-4222-8333-444455556666",
			Kind:            metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:        podResource,
			RequestKind:     &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			RequestResource: &podResource,
			Name:            "spark-pi",
			Namespace:       "spark-jobs",
			Operation:       admissionv1.Create,
			UserInfo: authnv1.UserInfo{Username: "system:serviceaccount:spark-jobs:airflow", UID: "u",
				Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"scheduler-0"}}},
			Object:  runtimeRaw(raw),
			DryRun:  &dryRun,
			Options: runtimeRaw([]byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply"}`)),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := call(t, h, whole).Response
	if !resp.Allowed || len(resp.Patch) == 0 {
		t.Fatalf("not injected: %+v", resp)
	}
	// Each admission generates its own application id.
	got, want := withGoldenAppID(t, raw, applied(t, raw, resp.Patch)), withGoldenAppID(t, raw, want)
	if !jsonpatch.Equal(got, want) {
		t.Errorf("the whole review gave\n%s\nthe bare one\n%s", got, want)
	}
}

func TestOnlyPodCreatesAreMutated(t *testing.T) {
	h := testHandler(t)
	raw := fixtureJSON(t, "testdata/minimal.pod.yaml")
	for _, mod := range []func(*admissionv1.AdmissionRequest){
		func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update },
		func(r *admissionv1.AdmissionRequest) { r.Resource.Resource = "configmaps" },
		func(r *admissionv1.AdmissionRequest) { r.SubResource = "ephemeralcontainers" },
	} {
		var r admissionv1.AdmissionReview
		_ = json.Unmarshal(review(raw), &r)
		mod(r.Request)
		body, _ := json.Marshal(r)
		resp := call(t, h, body).Response
		if !resp.Allowed || len(resp.Patch) > 0 {
			t.Errorf("%s %s/%s: allowed=%v patch=%s", r.Request.Operation, r.Request.Resource.Resource, r.Request.SubResource, resp.Allowed, resp.Patch)
		}
	}
}

func TestPanicBecomesErrorResult(t *testing.T) {
	h := testHandler(t)
	h.policy = func() *policy.Policy { panic("boom") }
	out := call(t, h, review(fixtureJSON(t, "testdata/minimal.pod.yaml")))
	if out.Response.Allowed || out.Response.Result.Code != http.StatusInternalServerError || !strings.Contains(out.Response.Result.Message, "boom") {
		t.Errorf("response = %+v", out.Response)
	}
	if out.Response.UID == "" {
		t.Error("uid not echoed after a panic")
	}
}

func TestRefusalIsForbiddenWithMessage(t *testing.T) {
	h := testHandler(t)
	resp := call(t, h, review(fixtureJSON(t, "testdata/refuse-image.pod.yaml"))).Response
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Reason != metav1.StatusReasonForbidden {
		t.Fatalf("response = %+v", resp)
	}
	if got := counterValue(h.metrics.admissions.WithLabelValues("refused", "image_not_allowed")); got != 1 {
		t.Errorf("refusal metric = %v, want 1", got)
	}
}

// FuzzAdmit feeds the handler arbitrary bodies: it must always answer with
// an AdmissionReview and never panic.
func FuzzAdmit(f *testing.F) {
	files, _ := fixturesFS()
	for _, file := range files {
		data, _ := os.ReadFile(file)
		if raw, err := yamlToJSON(data); err == nil {
			f.Add(review(raw))
		}
	}
	f.Add([]byte("garbage"))
	f.Add([]byte(`{"request":null}`))
	h := testHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) { call(t, h, body) })
}

// BenchmarkAdmit admits the test pods under the test policy, and the
// example pods under the policy `make bench` runs with, as its webhook
// section sends them.
func BenchmarkAdmit(b *testing.B) {
	for _, tc := range []struct{ name, pod, policy string }{
		{"minimal", "testdata/minimal.pod.yaml", "testdata/policy.yaml"},
		{"large", "testdata/large.pod.yaml", "testdata/policy.yaml"},
		{"spark-pi", "../examples/spark-pi-pod.yaml", "../bench/policy.yaml"},
		{"pyspark", "../examples/pyspark-pod.yaml", "../bench/policy.yaml"},
	} {
		h := policyHandler(b, tc.policy)
		data, err := os.ReadFile(tc.pod)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := yamlToJSON(data)
		body := review(raw)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodPost, "/mutate-pods", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Body.String())
				}
			}
		})
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
