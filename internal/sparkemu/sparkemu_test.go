package sparkemu

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectorEncodingIsFabric8s(t *testing.T) {
	sel := selector{
		equals:    map[string]string{"spark-app-selector": "spark-abc", "spark-role": "executor"},
		notEquals: map[string]string{"spark-exec-inactive": "true"},
		in:        map[string][]string{"spark-exec-id": ids([]int{2, 1})},
	}
	got := query("status.phase=Running", sel.String())
	want := "fieldSelector=status.phase%3DRunning&labelSelector=spark-app-selector%3Dspark-abc%2Cspark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue%2Cspark-exec-id%20in%20%281%2C2%29"
	if got != want {
		t.Errorf("query\n got %s\nwant %s", got, want)
	}
}

// recorder is an API server that records requests and answers what the
// start sequence needs.
type recorder struct {
	mu    sync.Mutex
	calls []string
	fail  int // answer this many POSTs with 500 first
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.calls = append(r.calls, req.Method+" "+req.URL.RequestURI()+" "+req.Header.Get("Content-Type")+" "+string(body[:min(len(body), 0)]))
	fail := req.Method == "POST" && r.fail > 0
	if fail {
		r.fail--
	}
	r.mu.Unlock()
	if req.Header.Get("Authorization") != "Bearer t" || !strings.HasPrefix(req.Header.Get("User-Agent"), "fabric8-kubernetes-client/") {
		w.WriteHeader(401)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case fail:
		w.WriteHeader(500)
	case req.Method == "GET" && strings.HasSuffix(req.URL.Path, "/pods/driver"):
		_ = json.NewEncoder(w).Encode(corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "driver", UID: "u1"}})
	case req.Method == "GET" && req.URL.Query().Get("watch") == "true":
		w.WriteHeader(200) // no events; the stream ends
	case req.Method == "GET":
		_ = json.NewEncoder(w).Encode(corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}})
	case req.Method == "POST":
		w.WriteHeader(201)
		_, _ = w.Write(body)
	default:
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{}`))
	}
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func TestStartSequenceAndStop(t *testing.T) {
	rec := &recorder{fail: 2}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	d := New(Config{Server: srv.URL, Token: "t", Namespace: "ns", AppID: "spark-abc", DriverPod: "driver", Image: "img", Mode: Spark35, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	calls := rec.list()
	want := []string{
		"GET /api/v1/namespaces/ns/pods/driver",
		"GET /api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver",
		// waitUntilReady's watch: the WebSocket upgrade, refused here, then the HTTP watch
		"GET /api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver&resourceVersion=7&timeoutSeconds=600&allowWatchBookmarks=true&watch=true",
		"GET /api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver&resourceVersion=7&timeoutSeconds=600&allowWatchBookmarks=true&watch=true",
		"POST /api/v1/namespaces/ns/configmaps application/json; charset=utf-8", // 500
		"POST /api/v1/namespaces/ns/configmaps application/json; charset=utf-8", // 500
		"POST /api/v1/namespaces/ns/configmaps application/json; charset=utf-8", // fabric8 retries POST too
	}
	for i, w := range want {
		if i >= len(calls) || !strings.HasPrefix(calls[i], w) {
			t.Fatalf("call %d:\n got %q\nwant %q\nall: %q", i, at(calls, i), w, calls)
		}
	}
	tail := []string{
		"DELETE /api/v1/namespaces/ns/services?labelSelector=spark-app-selector%3Dspark-abc",
		"DELETE /api/v1/namespaces/ns/persistentvolumeclaims?labelSelector=spark-app-selector%3Dspark-abc",
		"DELETE /api/v1/namespaces/ns/pods?labelSelector=spark-app-selector%3Dspark-abc%2Cspark-role%3Dexecutor",
		"DELETE /api/v1/namespaces/ns/configmaps?labelSelector=spark-app-selector%3Dspark-abc%2Cspark-role%3Dexecutor",
	}
	var deletes []string
	for _, c := range calls {
		if strings.HasPrefix(c, "DELETE") {
			deletes = append(deletes, c)
		}
	}
	if len(deletes) != 4 {
		t.Fatalf("stop made %d deletes: %q", len(deletes), deletes)
	}
	for i, w := range tail {
		if !strings.HasPrefix(deletes[i], w) {
			t.Errorf("stop %d:\n got %q\nwant %q", i, deletes[i], w)
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

func TestMissingDriverPodIsFatal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }))
	defer srv.Close()
	d := New(Config{Server: srv.URL, Namespace: "ns", AppID: "a", DriverPod: "gone"})
	if err := d.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "No pod was found named gone") {
		t.Errorf("err = %v", err)
	}
}
