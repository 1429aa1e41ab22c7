package kubecore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// seen is one request the fake API server received.
type seen struct{ method, path, query, accept, contentType string }

// TestRequests: each resource is at the path the API server serves it,
// asks for protobuf first, and sends its options as query parameters.
func TestRequests(t *testing.T) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Content-Type")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
		case strings.HasSuffix(r.URL.Path, "/pods/pi"):
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pi","namespace":"spark"}}`))
		case strings.HasSuffix(r.URL.Path, "/storageclasses/fast"):
			_, _ = w.Write([]byte(`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"x","allowVolumeExpansion":true}`))
		case strings.HasSuffix(r.URL.Path, "/pods/pi-exec-1"):
			_, _ = w.Write([]byte(`{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":"pi-exec-1"}}`))
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			_, _ = w.Write([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":true,"user":{"username":"alice"}}}`))
		case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
			_, _ = w.Write([]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{"allowed":true}}`))
		case strings.HasSuffix(r.URL.Path, "/ingresses"):
			_, _ = w.Write([]byte(`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"ui","namespace":"spark"}}`))
		default:
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Status","status":"Success"}`))
		}
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	v, err := c.ServerVersion(ctx)
	if err != nil || v.GitVersion != "v1.37.2" {
		t.Fatalf("ServerVersion: %+v, %v", v, err)
	}
	pod, err := c.Pods("spark").Get(ctx, "pi", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil || pod.Name != "pi" {
		t.Fatalf("Get pod: %+v, %v", pod, err)
	}
	if err := c.ConfigMaps("spark").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "spark-app-selector=spark-1"}); err != nil {
		t.Fatalf("DeleteCollection: %v", err)
	}
	ing, err := c.Ingresses("spark").Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "ui"}}, metav1.CreateOptions{FieldManager: "sparklet-sidecar"})
	if err != nil || ing.Name != "ui" {
		t.Fatalf("Create Ingress: %+v, %v", ing, err)
	}
	if _, err := c.Events("spark").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "pi.1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create Event: %v", err)
	}
	tr, err := c.TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "t"}}, metav1.CreateOptions{})
	if err != nil || tr.Status.User.Username != "alice" {
		t.Fatalf("Create TokenReview: %+v, %v", tr, err)
	}
	sar, err := c.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed {
		t.Fatalf("Create SubjectAccessReview: %+v, %v", sar, err)
	}

	if expands, err := c.StorageClassExpands(ctx, "fast"); err != nil || !expands {
		t.Fatalf("StorageClassExpands: %v, %v", expands, err)
	}
	if m, err := c.PodMetrics(ctx, "spark", "pi-exec-1"); err != nil || !strings.Contains(string(m), `"PodMetrics"`) {
		t.Fatalf("PodMetrics: %s, %v", m, err)
	}
	if _, err := c.ResourceQuotas("spark").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("List ResourceQuotas: %v", err)
	}

	want := []seen{
		{"GET", "/version", "", "", ""},
		{"GET", "/api/v1/namespaces/spark/pods/pi", "resourceVersion=0", "application/vnd.kubernetes.protobuf,application/json", ""},
		{"DELETE", "/api/v1/namespaces/spark/configmaps", "labelSelector=spark-app-selector%3Dspark-1", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"POST", "/apis/networking.k8s.io/v1/namespaces/spark/ingresses", "fieldManager=sparklet-sidecar", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"POST", "/api/v1/namespaces/spark/events", "", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", "", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"GET", "/apis/storage.k8s.io/v1/storageclasses/fast", "", "application/json", ""},
		{"GET", "/apis/metrics.k8s.io/v1beta1/namespaces/spark/pods/pi-exec-1", "", "application/json", ""},
		{"GET", "/api/v1/namespaces/spark/resourcequotas", "", "application/vnd.kubernetes.protobuf,application/json", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("requests %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.method != w.method || g.path != w.path || g.query != w.query || (w.accept != "" && g.accept != w.accept) || g.contentType != w.contentType {
			t.Errorf("request %d: %+v, want %+v", i, g, w)
		}
	}
}
