package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

func TestRefusedPathsAnswer403WithAReason(t *testing.T) {
	h := start(t, "{}")
	cases := []struct {
		method, path, mention string
	}{
		{http.MethodPost, "/apis/apps/v1/namespaces/" + testNS + "/statefulsets", "spark.kubernetes.allocation.pods.allocator=direct"},
		{http.MethodPost, "/apis/apps/v1/namespaces/" + testNS + "/deployments", "spark.kubernetes.allocation.pods.allocator=direct"},
		{http.MethodPatch, "/apis/apps/v1/namespaces/" + testNS + "/deployments/spark-d-app-0/scale", "allocator=direct"},
		{http.MethodGet, "/apis/apps/v1", "allocator=direct"},
		{http.MethodPatch, "/api/v1/namespaces/" + testNS + "/pods/pi-exec-1/ephemeralcontainers", "pods/ephemeralcontainers"},
		{http.MethodPost, "/api/v1/namespaces/" + testNS + "/pods/pi-exec-1/eviction", "pods/eviction"},
	}
	for _, tc := range cases {
		code, body := h.do(tc.method, tc.path, "application/json", []byte(`{}`))
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("%s %s: not a Status: %s", tc.method, tc.path, body)
		}
		if code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, tc.mention) {
			t.Errorf("%s %s: %d %s %q; want 403 Forbidden mentioning %q", tc.method, tc.path, code, st.Reason, st.Message, tc.mention)
		}
	}
	if n := len(h.client.Actions()); n == 0 {
		t.Fatal("the fake client recorded nothing; the harness is not what this test assumes")
	}
	for _, a := range h.client.Actions() {
		if a.GetResource().Group == "apps" || a.GetSubresource() != "" {
			t.Errorf("a refused call reached the API server: %v", a)
		}
	}
}

// Spark's own owner reference has no blockOwnerDeletion; one the JVM sends
// anyway must not reach the API server, where OwnerReferencesPermissionEnforcement
// would refuse it without update on pods/finalizers.
func TestExecutorOwnerReferenceHasNoBlockOwnerDeletion(t *testing.T) {
	h := start(t, "{}")
	pod := executor(1)
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "pi", UID: "driver-uid", Controller: &yes, BlockOwnerDeletion: &yes}}
	if code, body := h.do(http.MethodPost, "/api/v1/namespaces/"+testNS+"/pods", "application/json", pod); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	found := false
	for _, a := range h.client.Actions() {
		c, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetResource().Resource != "pods" {
			continue
		}
		found = true
		created := c.GetObject().(*corev1.Pod)
		if len(created.OwnerReferences) != 1 || created.OwnerReferences[0].UID != "driver-uid" || created.OwnerReferences[0].BlockOwnerDeletion != nil {
			t.Errorf("owner references sent to the API server: %+v", created.OwnerReferences)
		}
	}
	if !found {
		t.Fatal("no pod create reached the API server")
	}
}
