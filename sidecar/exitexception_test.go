package sidecar

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// exitExceptionPatch is the body the 4.3.0 JVM sends
// (SparkKubernetesDiagnosticsSetter: a strategic-merge patch of a Pod built
// with only the annotation; fabric8 writes its apiVersion and kind).
const exitExceptionPatch = `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"spark.exit-exception":"java.lang.NumberFormatException: For input string: \"not-a-number\"\n\tat java.base/java.lang.Integer.parseInt(Integer.java:668)"}}}`

const (
	strategic = "application/strategic-merge-patch+json"
	jsonPatch = "application/json-patch+json"
	merge     = "application/merge-patch+json"
)

func TestDriverAnnotatesItsExitException(t *testing.T) {
	for _, tc := range []struct{ name, contentType, body string }{
		{"4.3.0 strategic merge", strategic, exitExceptionPatch},
		{"merge", merge, `{"metadata":{"annotations":{"spark.exit-exception":"boom"}}}`},
		{"fabric8 edit", jsonPatch, `[{"op":"add","path":"/metadata/annotations/spark.exit-exception","value":"boom"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := driver() // an injected driver always has annotations
			drv.Annotations = map[string]string{vocab.AnnotationStatus: "{}"}
			h := startWith(t, "", drv)
			code, body := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi", tc.contentType, []byte(tc.body))
			if code != 200 {
				t.Fatalf("PATCH of the driver's exit exception: %d %s", code, body)
			}
			pod, err := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[vocab.AnnotationExitException]; got == "" {
				t.Errorf("the driver pod has no %s annotation after the patch: %v", vocab.AnnotationExitException, pod.Annotations)
			}
		})
	}
}

func TestDriverPodTakesNoOtherPatch(t *testing.T) {
	for _, tc := range []struct{ name, contentType, body, refused string }{
		{"another annotation", strategic, `{"metadata":{"annotations":{"spark.exit-exception":"x","sparklet.io/status":"{}"}}}`, "annotation sparklet.io/status"},
		{"a label", strategic, `{"metadata":{"labels":{"spark-app-selector":"mine"}}}`, "metadata.labels"},
		{"the spec", merge, `{"spec":{"activeDeadlineSeconds":1}}`, "a change of spec"},
		{"the status", strategic, `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Succeeded"},"metadata":{"annotations":{"spark.exit-exception":"x"}}}`, "a change of status"},
		{"another kind", strategic, `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"spark.exit-exception":"x"}}}`, `kind "Secret"`},
		{"removing it", merge, `{"metadata":{"annotations":{"spark.exit-exception":null}}}`, "removing annotation spark.exit-exception"},
		{"nothing", strategic, `{"metadata":{"annotations":{}}}`, "sets no annotation"},
		{"a json patch of the spec", jsonPatch, `[{"op":"add","path":"/metadata/annotations/spark.exit-exception","value":"x"},{"op":"replace","path":"/spec/containers/0/image","value":"evil"}]`, "replace /spec/containers/0/image"},
		{"a json patch of all annotations", jsonPatch, `[{"op":"replace","path":"/metadata/annotations","value":{}}]`, "replace /metadata/annotations"},
		{"server-side apply", "application/apply-patch+yaml", `metadata: {annotations: {spark.exit-exception: x}}`, `patch type "application/apply-patch+yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, "")
			code, body := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi", tc.contentType, []byte(tc.body))
			checkRefusal(t, code, body, tc.refused)
			if n := h.actions("patch", "pods"); n != 0 {
				t.Errorf("%d patches reached the API server", n)
			}
		})
	}
}

// A driver whose effective configuration turns the annotation off (the
// policy's spark.enforced) cannot write it either.
func TestExitExceptionOffIsRefused(t *testing.T) {
	drv := driver()
	drv.Annotations = map[string]string{vocab.AnnotationEffectiveConf: patches.KeyAnnotateExitException + " false\n"}
	h := startWith(t, "", drv)
	code, body := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi", strategic, []byte(exitExceptionPatch))
	checkRefusal(t, code, body, patches.KeyAnnotateExitException+" is false")
	if n := h.actions("patch", "pods"); n != 0 {
		t.Errorf("%d patches reached the API server", n)
	}
}

// checkRefusal wants a Kubernetes 403 Status that names what is refused.
func checkRefusal(t *testing.T, code int, body []byte, refused string) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("answer is not a Status: %v: %s", err, body)
	}
	if code != 403 || st.Kind != "Status" || st.Code != 403 || st.Reason != metav1.StatusReasonForbidden {
		t.Errorf("answer %d %s/%d %s, want a 403 Forbidden Status", code, st.Kind, st.Code, st.Reason)
	}
	for _, want := range []string{`pods "pi" is forbidden`, "only the annotation spark.exit-exception", refused} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("message %q does not say %q", st.Message, want)
		}
	}
}
