package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/vocab"
)

// fuzzTarget is one sidecar on a fake API server holding, besides the
// driver and one executor, pods the sidecar must never touch: another
// application's executor in its namespace and a pod in another namespace.
type fuzzTarget struct {
	client *fake.Clientset
	base   string
	token  string
}

var untouchable = []*corev1.Pod{
	{ObjectMeta: metav1.ObjectMeta{Name: "other-app-exec-1", Namespace: testNS, ResourceVersion: "7", Labels: map[string]string{
		vocab.LabelAppID: "spark-other", vocab.LabelRole: "executor", vocab.LabelExecID: "1"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "pi-exec-1", Namespace: "elsewhere", ResourceVersion: "7", Labels: map[string]string{
		vocab.LabelAppID: testApp, vocab.LabelRole: "executor", vocab.LabelExecID: "1"}}},
}

func startFuzzTarget(f *testing.F) *fuzzTarget {
	f.Helper()
	objects := []runtime.Object{driver(), executorIn(1, corev1.PodRunning)}
	for _, p := range untouchable {
		objects = append(objects, p.DeepCopy())
	}
	client := fake.NewClientset(objects...)
	sc := newTestSidecar(f, "limits: {maxExecutors: 5}")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx, kubecoretest.New(client)) }()
	select {
	case <-sc.Ready():
	case err := <-done:
		f.Fatalf("sidecar exited: %v", err)
	case <-time.After(10 * time.Second):
		f.Fatal("sidecar not ready")
	}
	f.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			f.Error("sidecar did not stop")
		}
	})
	tok, err := os.ReadFile(sc.cfg.TokenFile)
	if err != nil {
		f.Fatal(err)
	}
	client.ClearActions() // the informers' start and the server version
	return &fuzzTarget{client: client, base: "http://" + sc.APIAddr(), token: string(tok)}
}

// FuzzAPI sends the localhost API arbitrary methods, paths, queries,
// headers and bodies. It must answer every request with a metav1.Status or
// a Kubernetes object (or start a watch), and never act outside its
// namespace and application.
func FuzzAPI(f *testing.F) {
	pods := "/api/v1/namespaces/" + testNS + "/pods"
	exec, _ := json.Marshal(executor(2))
	seeds := []struct {
		method, path, query, headers string
		body                         []byte
	}{
		{"GET", pods, "labelSelector=spark-app-selector%3D" + testApp + "%2Cspark-role%3Dexecutor", "", nil},
		{"GET", pods + "/pi-exec-1", "", "", nil},
		{"GET", pods + "/pi", "", "", nil},
		{"POST", pods, "", "Content-Type: application/json", exec},
		{"POST", pods, "", "Content-Type: application/json", []byte(`{"kind":"Pod","metadata":{"name":"x","labels":{"spark-app-selector":"spark-other"}}}`)},
		{"PATCH", pods + "/pi-exec-1", "", "Content-Type: application/merge-patch+json", []byte(`{"metadata":{"labels":{"spark-app-selector":"x"}}}`)},
		{"PATCH", pods + "/other-app-exec-1", "", "Content-Type: application/json-patch+json", []byte(`[{"op":"remove","path":"/metadata"}]`)},
		{"DELETE", pods + "/pi-exec-1", "", "", nil},
		{"DELETE", pods + "/other-app-exec-1", "", "", nil},
		{"DELETE", pods, "labelSelector=spark-role%3Dexecutor", "", nil},
		{"DELETE", "/api/v1/namespaces/elsewhere/pods/pi-exec-1", "", "", nil},
		{"GET", "/api/v1/namespaces/" + testNS + "/configmaps", "labelSelector=spark-app-selector%3D" + testApp, "", nil},
		{"DELETE", "/api/v1/namespaces/" + testNS + "/persistentvolumeclaims", "labelSelector=spark-app-selector%3D" + testApp, "", nil},
		{"POST", "/apis/apps/v1/namespaces/" + testNS + "/statefulsets", "", "Content-Type: application/json", []byte(`{}`)},
		{"GET", "/api/v1/namespaces/" + testNS + "/secrets", "", "", nil},
		{"GET", "/api", "", "", nil},
		{"GET", "/apis", "", "", nil},
		{"GET", "/api/v1", "", "", nil},
		{"PUT", pods + "/pi-exec-1/status", "", "Content-Type: application/json", []byte(`{}`)},
		{"GET", "/api/v1/namespaces/" + testNS + "/pods/../../../namespaces/elsewhere/pods", "", "", nil},
		{"BREW", "/%2e%2e/api", "a=%ZZ&&=", "X-Test: 1\nContent-Type: text/plain", []byte{0, 1, 2}},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.headers, s.body, true)
	}
	f.Add("GET", pods, "", "", []byte(nil), false)
	target := startFuzzTarget(f)
	f.Fuzz(func(t *testing.T, method, path, query, headers string, body []byte, authorized bool) {
		target.check(t, method, path, query, headers, body, authorized)
	})
}

func (ft *fuzzTarget) check(t *testing.T, method, path, query, headers string, body []byte, authorized bool) {
	u, err := url.Parse(ft.base + "/" + strings.TrimPrefix(path, "/"))
	if err != nil {
		return // not a request a client can send
	}
	u.RawQuery = query
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return
	}
	for _, line := range strings.Split(headers, "\n") {
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		// A WebSocket upgrade is a watch; its frames are tested elsewhere.
		// A header a client cannot send is not the server's to answer.
		if ok && httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(strings.TrimSpace(v)) &&
			!strings.EqualFold(k, "Upgrade") && !strings.EqualFold(k, "Connection") {
			req.Header.Add(k, strings.TrimSpace(v))
		}
	}
	req.Header.Del("Authorization")
	if authorized {
		req.Header.Set("Authorization", "Bearer "+ft.token)
	}
	watch := isWatch(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && watch {
			return
		}
		t.Fatalf("%s %s: no answer: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil && !(watch && resp.StatusCode == http.StatusOK) {
		t.Fatalf("%s %s: read answer: %v", method, u, err)
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.HasPrefix(data, []byte("400 Bad Request")) {
		return // net/http refused the request line before the API saw it
	}
	if !authorized && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s %s without the token: HTTP %d", method, u, resp.StatusCode)
	}
	if !(watch && resp.StatusCode == http.StatusOK) && req.URL.Path != "/version" {
		var obj struct {
			Kind       string `json:"kind"`
			APIVersion string `json:"apiVersion"`
		}
		// Discovery's APIVersions has no apiVersion, as the API server's.
		switch err := json.Unmarshal(data, &obj); {
		case err != nil || obj.Kind == "":
			t.Errorf("%s %s: HTTP %d answered with neither a Status nor an object: %q", method, u, resp.StatusCode, data)
		case resp.StatusCode >= 400 && (obj.Kind != "Status" || obj.APIVersion != "v1"):
			t.Errorf("%s %s: HTTP %d answered with a %s %s, not a v1 Status", method, u, resp.StatusCode, obj.APIVersion, obj.Kind)
		}
	}
	ft.checkScope(t, method+" "+u.String())
}

func isWatch(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("watch") != "" || strings.Contains(r.URL.Path, "/watch/")
}

// checkScope fails when the sidecar acted outside its namespace or
// application: every call it made stays in its namespace, and the pods it
// must not touch are as they were.
func (ft *fuzzTarget) checkScope(t *testing.T, what string) {
	for _, a := range ft.client.Actions() {
		if ns := a.GetNamespace(); ns != testNS && !(a.GetVerb() == "get" && a.GetResource().Resource == "version") {
			t.Errorf("%s: the sidecar made a %s %s call in namespace %q", what, a.GetVerb(), a.GetResource().Resource, ns)
		}
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource != "events" {
			if m, err := meta.Accessor(c.GetObject()); err != nil || m.GetLabels()[vocab.LabelAppID] != testApp {
				t.Errorf("%s: the sidecar created a %s outside its application", what, a.GetResource().Resource)
			}
		}
	}
	ft.client.ClearActions()
	for _, want := range untouchable {
		got, err := ft.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), want.Namespace, want.Name)
		if err != nil {
			t.Fatalf("%s: pod %s/%s is gone: %v", what, want.Namespace, want.Name, err)
		}
		pod := got.(*corev1.Pod)
		if pod.ResourceVersion != want.ResourceVersion || pod.Labels[vocab.LabelAppID] != want.Labels[vocab.LabelAppID] {
			t.Fatalf("%s: pod %s/%s was changed: %+v", what, want.Namespace, want.Name, pod.ObjectMeta)
		}
	}
}
