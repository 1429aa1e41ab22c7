package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

const (
	testNS  = "spark"
	testApp = "spark-app-1"
)

type harness struct {
	t      *testing.T
	client *fake.Clientset
	sc     *Sidecar
	base   string
	token  string
	done   chan error
	cancel context.CancelFunc
	header http.Header // of the last answer to do
}

func driver() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: testNS, UID: "driver-uid",
			Labels: map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: testApp}},
		Spec: corev1.PodSpec{ServiceAccountName: "spark-driver", Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:3.5.4"}}},
	}
}

func start(t *testing.T, policyYAML string, objects ...runtime.Object) *harness {
	t.Helper()
	return startWith(t, policyYAML, driver(), objects...)
}

// startWith starts a sidecar whose driver pod is drv.
func startWith(t *testing.T, policyYAML string, drv *corev1.Pod, objects ...runtime.Object) *harness {
	t.Helper()
	return startSidecar(t, newTestSidecar(t, policyYAML), drv, objects...)
}

// startSidecar starts sc, whose driver pod is drv.
func startSidecar(t *testing.T, sc *Sidecar, drv *corev1.Pod, objects ...runtime.Object) *harness {
	t.Helper()
	return startFake(t, sc, fake.NewClientset(append([]runtime.Object{drv}, objects...)...))
}

// startReacting starts a sidecar whose fake API server answers verb on
// resource with react first. The reactor goes in before the sidecar starts:
// the fake client's reactor chain has no lock, and the sidecar writes
// Events from the start.
func startReacting(t *testing.T, verb, resource string, react k8stesting.ReactionFunc) *harness {
	t.Helper()
	client := fake.NewClientset(driver())
	client.PrependReactor(verb, resource, react)
	return startFake(t, newTestSidecar(t, ""), client)
}

// startFake starts sc against client, which holds its driver pod.
func startFake(t *testing.T, sc *Sidecar, client *fake.Clientset) *harness {
	t.Helper()
	return startCore(t, sc, client, kubecoretest.New(client))
}

// startCore starts sc against core, which serves client.
func startCore(t *testing.T, sc *Sidecar, client *fake.Clientset, core *kubecoretest.Clientset) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, client: client, sc: sc, done: make(chan error, 1), cancel: cancel}
	go func() { h.done <- sc.Run(ctx, core) }()
	select {
	case <-sc.Ready():
	case err := <-h.done:
		t.Fatalf("sidecar exited: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar not ready")
	}
	tok, err := os.ReadFile(sc.cfg.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	h.token, h.base = string(tok), "http://"+sc.APIAddr()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("sidecar did not stop")
		}
	})
	return h
}

func (h *harness) do(method, path, contentType string, body any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, h.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+h.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	h.header = resp.Header
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func executor(id int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pi-exec-%d", id), Labels: map[string]string{
			vocab.LabelAppID: testApp, vocab.LabelRole: "executor", vocab.LabelExecID: fmt.Sprint(id)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "spark-kubernetes-executor", Image: "apache/spark:3.5.4"}}},
	}
}

func (h *harness) actions(verb, resource string) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func (h *harness) waitListed(selector string, n int) []corev1.Pod {
	h.t.Helper()
	var list corev1.PodList
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body := h.do("GET", "/api/v1/namespaces/spark/pods?labelSelector="+selector, "", nil)
		if code != 200 || json.Unmarshal(body, &list) != nil {
			return false, nil
		}
		return len(list.Items) == n, nil
	})
	if err != nil {
		h.t.Fatalf("list %q did not reach %d pods: got %d", selector, n, len(list.Items))
	}
	return list.Items
}

func TestAuthAndScope(t *testing.T) {
	h := start(t, "")
	req, _ := http.NewRequest("GET", h.base+"/api/v1/namespaces/spark/pods", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != 401 || st.Kind != "Status" || st.Reason != metav1.StatusReasonUnauthorized {
		t.Errorf("no token: %d %+v", resp.StatusCode, st)
	}
	if code, body := h.do("GET", "/api/v1/namespaces/other/pods", "", nil); code != 403 || !strings.Contains(string(body), "only namespace") {
		t.Errorf("other namespace: %d %s", code, body)
	}
	if code, _ := h.do("GET", "/api/v1/namespaces/spark/secrets", "", nil); code != 403 {
		t.Errorf("secrets: %d", code)
	}
	if code, _ := h.do("GET", "/api/v1/nodes", "", nil); code != 404 {
		t.Errorf("nodes: %d", code)
	}
	code, body := h.do("GET", "/api/v1/namespaces/spark/pods/pi", "", nil)
	var pod corev1.Pod
	_ = json.Unmarshal(body, &pod)
	if code != 200 || pod.Kind != "Pod" || pod.APIVersion != "v1" || pod.UID != "driver-uid" {
		t.Errorf("driver GET: %d kind=%q apiVersion=%q uid=%q", code, pod.Kind, pod.APIVersion, pod.UID)
	}
}

func TestCreateIsPatchedIdempotentAndServedFromCache(t *testing.T) {
	h := start(t, "executor:\n  enforced:\n    labels: {team: data}\n")
	code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json; charset=utf-8", executor(1))
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created corev1.Pod
	_ = json.Unmarshal(body, &created)
	if created.Kind != "Pod" || created.Labels["team"] != "data" || len(created.OwnerReferences) != 1 || created.OwnerReferences[0].UID != "driver-uid" {
		t.Errorf("created pod not patched: %+v", created.ObjectMeta)
	}
	h.waitListed("spark-app-selector%3Dspark-app-1%2Cspark-role%3Dexecutor", 1)
	// fabric8 retries a POST after a 5xx: the second one must not fail or create.
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1)); code != 200 {
		t.Errorf("re-POST: %d %s", code, body)
	}
	if n := h.actions("create", "pods"); n != 1 {
		t.Errorf("create actions = %d, want 1", n)
	}
	lists := h.actions("list", "pods")
	for i := 0; i < 5; i++ {
		h.do("GET", "/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor", "", nil)
	}
	if n := h.actions("list", "pods"); n != lists {
		t.Errorf("the JVM's lists reached the API server: %d list actions, want %d", n, lists)
	}
}

func TestPolicyRefusalAndOtherApp(t *testing.T) {
	h := start(t, "")
	bad := executor(1)
	bad.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", bad); code != 403 || !strings.Contains(string(body), "hostPath") {
		t.Errorf("hostPath executor: %d %s", code, body)
	}
	other := executor(2)
	other.Labels[vocab.LabelAppID] = "someone-else"
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", other); code != 403 || !strings.Contains(string(body), "someone-else") {
		t.Errorf("other app's executor: %d %s", code, body)
	}
	if n := h.actions("create", "pods"); n != 0 {
		t.Errorf("refused executors reached the API server: %d creates", n)
	}
}

func TestQuotaBackoffShieldsTheAPIServer(t *testing.T) {
	h := startReacting(t, "create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsGR, "x", fmt.Errorf("exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10"))
	})
	for i := 1; i <= 5; i++ { // the JVM retries every batch delay
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(i)); code != 403 || !strings.Contains(string(body), "exceeded quota") {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
	}
	if n := h.actions("create", "pods"); n != 1 {
		t.Errorf("%d creates reached the API server during one backoff period, want 1", n)
	}
	h.sc.events.flush(5 * time.Second) // Events are written asynchronously
	events, _ := h.client.CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
	quota := 0
	for _, e := range events.Items {
		if e.Reason == "ExecutorQuota" {
			quota++
		}
	}
	if quota != 1 {
		t.Errorf("%d ExecutorQuota events, want 1", quota)
	}
}

func TestMaxExecutors(t *testing.T) {
	h := start(t, "limits: {maxExecutors: 2}\n")
	for i := 1; i <= 2; i++ {
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(i)); code != 201 {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
	}
	h.waitListed("spark-role%3Dexecutor", 2)
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(3)); code != 403 || !strings.Contains(string(body), "limits.maxExecutors=2") {
		t.Errorf("third executor: %d %s", code, body)
	}
}

func TestSelectorsDeleteAndPatch(t *testing.T) {
	h := start(t, "", executorIn(1, corev1.PodRunning), executorIn(2, corev1.PodPending), executorIn(3, corev1.PodPending))
	if got := h.waitListed("spark-exec-id%20in%20%281%2C2%29", 2); got[0].Name != "pi-exec-1" {
		t.Errorf("in: %v", got[0].Name)
	}
	h.waitListed("spark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue", 3)
	code, body := h.do("GET", "/api/v1/namespaces/spark/pods?fieldSelector=status.phase%3DPending&labelSelector=spark-role%3Dexecutor", "", nil)
	var list corev1.PodList
	_ = json.Unmarshal(body, &list)
	if code != 200 || len(list.Items) != 2 {
		t.Errorf("phase selector: %d, %d items", code, len(list.Items))
	}
	// Spark 3.5 lifecycle manager: label an executor inactive (json-patch with resourceVersion).
	patch := `[{"op":"add","path":"/metadata/labels/spark-exec-inactive","value":"true"}]`
	if code, body := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi-exec-1", "application/json-patch+json", []byte(patch)); code != 200 {
		t.Errorf("patch: %d %s", code, body)
	}
	h.waitListed("spark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue", 2)
	steal := `[{"op":"replace","path":"/metadata/labels/spark-app-selector","value":"mine"}]`
	if code, _ := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi-exec-2", "application/json-patch+json", []byte(steal)); code != 403 {
		t.Errorf("patching the app label: %d, want 403", code)
	}
	spec := `{"spec":{"nodeName":"x"}}`
	if code, _ := h.do("PATCH", "/api/v1/namespaces/spark/pods/pi-exec-2", "application/merge-patch+json", []byte(spec)); code != 403 {
		t.Errorf("patching the spec: %d, want 403", code)
	}
	// Downscale: delete pending executors by collection.
	del := []byte(`{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Background"}`)
	if code, body := h.do("DELETE", "/api/v1/namespaces/spark/pods?fieldSelector=status.phase%3DPending&labelSelector=spark-app-selector%3Dspark-app-1%2Cspark-role%3Dexecutor%2Cspark-exec-id%20in%20%282%2C3%29", "application/json", del); code != 200 {
		t.Errorf("deletecollection: %d %s", code, body)
	}
	h.waitListed("spark-role%3Dexecutor", 1)
	if code, _ := h.do("DELETE", "/api/v1/namespaces/spark/pods/pi-exec-9", "application/json", del); code != 404 {
		t.Errorf("delete of an unknown executor: %d, want 404 (fabric8 swallows it)", code)
	}
	if code, _ := h.do("DELETE", "/api/v1/namespaces/spark/pods/pi", "application/json", del); code != 403 {
		t.Errorf("delete of the driver: %d, want 403", code)
	}
}

func executorIn(id int, phase corev1.PodPhase) *corev1.Pod {
	p := executor(id)
	p.Namespace = testNS
	p.Status.Phase = phase
	return p
}

func TestWatchOverHTTPResumesWithoutGone(t *testing.T) {
	h := start(t, "", executorIn(1, corev1.PodRunning))
	req, _ := http.NewRequest("GET", h.base+"/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor&resourceVersion=1&allowWatchBookmarks=true&watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	events := make(chan metav1.WatchEvent, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e metav1.WatchEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	next := func() metav1.WatchEvent {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("watch ended")
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		return metav1.WatchEvent{}
	}
	if e := next(); e.Type != "ADDED" || !strings.Contains(string(e.Object.Raw), "pi-exec-1") {
		t.Errorf("first event: %s %s", e.Type, e.Object.Raw)
	}
	if _, err := h.client.CoreV1().Pods(testNS).Create(context.Background(), executorIn(2, corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Type != "ADDED" || !strings.Contains(string(e.Object.Raw), `"kind":"Pod"`) || !strings.Contains(string(e.Object.Raw), "pi-exec-2") {
		t.Errorf("second event: %s %s", e.Type, e.Object.Raw)
	}
}

func TestLifecycleCleansUpWhenTheDriverEnds(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "spark-exec-1-conf-map", Namespace: testNS, Labels: map[string]string{vocab.LabelAppID: testApp}}}
	h := start(t, "", executorIn(1, corev1.PodRunning), cm)
	d := driver()
	d.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	if _, err := h.client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitExit("the Spark container ended")
	for _, r := range []string{"pods", "configmaps", "persistentvolumeclaims"} {
		if h.actions("delete-collection", r) != 1 {
			t.Errorf("no collection delete of %s", r)
		}
	}
	// The fake clientset records collection deletes but does not carry them
	// out; the end-to-end test checks that nothing is left.
}

// An empty list has "items": [] as the API server sends it, never null:
// Spark 3.5's allocator calls getItems on the PVC list and fails on null
// (ExecutorPodsAllocator.getReusablePVCs, v3.5.9), seen with a real JVM.
func TestEmptyListsHaveItems(t *testing.T) {
	h := start(t, "")
	for _, path := range []string{
		"/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor",
		"/api/v1/namespaces/spark/persistentvolumeclaims?labelSelector=spark-app-selector%3Dspark-app",
	} {
		code, body := h.do("GET", path, "", nil)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil || code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if string(raw["items"]) != "[]" {
			t.Errorf("GET %s: items = %s, want []", path, raw["items"])
		}
	}
}

// newTestSidecar is the sidecar of the driver pi in testNS, with the
// policy's section for testNS, logging nowhere.
func newTestSidecar(tb testing.TB, policyYAML string) *Sidecar {
	tb.Helper()
	pol, err := policy.Parse([]byte(policyYAML), "dev")
	if err != nil {
		tb.Fatal(err)
	}
	polJSON, _ := json.Marshal(pol.For(testNS))
	cfg := Config{PodName: "pi", Namespace: testNS, Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0",
		TokenFile: filepath.Join(tb.TempDir(), "token"), SparkContainer: "spark", PolicyJSON: string(polJSON), CleanupTimeout: 5 * time.Second}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	sc := New(cfg, log.WithField("component", "sidecar"))
	sc.endWait = 0 // the tests stop the sidecar without ending the Spark container
	return sc
}

// TestExecutorNeverRunsAsTheDriverAccount: whatever names the driver's
// ServiceAccount for an executor (the pod template's serviceAccountName
// or serviceAccount, Spark's fallback to the driver's account, the
// namespace's default when that is the driver's), the sidecar refuses the
// executor before it reaches the API server.
func TestExecutorNeverRunsAsTheDriverAccount(t *testing.T) {
	h := start(t, "")
	for name, mod := range map[string]func(*corev1.Pod){
		"serviceAccountName": func(p *corev1.Pod) { p.Spec.ServiceAccountName = "spark-driver" },
		"serviceAccount":     func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "spark-driver" },
	} {
		bad := executor(1)
		mod(bad)
		code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", bad)
		if code != 403 || !strings.Contains(string(body), `would run as the driver's ServiceAccount \"spark-driver\"`) {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if n := h.actions("create", "pods"); n != 0 {
		t.Errorf("executors on the driver's account reached the API server: %d creates", n)
	}
	ok := executor(2)
	ok.Spec.ServiceAccountName = "spark-executor"
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", ok); code != 201 {
		t.Errorf("executor on its own account: %d %s", code, body)
	}
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(3)); code != 201 {
		t.Errorf("executor on the namespace's default: %d %s", code, body)
	}

	// A driver that runs as default lends it to every executor that names
	// no account of its own.
	drv := driver()
	drv.Spec.ServiceAccountName = "default"
	h = startWith(t, "", drv)
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1)); code != 403 ||
		!strings.Contains(string(body), `would run as the driver's ServiceAccount \"default\"`) {
		t.Errorf("default account shared with the driver: %d %s", code, body)
	}
	if n := h.actions("create", "pods"); n != 0 {
		t.Errorf("an executor on the driver's default account reached the API server: %d creates", n)
	}
}

// TestExecutorNodeNameUnderBatchScheduler: an executor pod that names its
// node would skip the driver's batch scheduler; the sidecar refuses it
// before the API server sees it.
func TestExecutorNodeNameUnderBatchScheduler(t *testing.T) {
	drv := driver()
	drv.Annotations = map[string]string{vocab.AnnotationScheduling: `{"scheduler":"kueue","queue":"lq"}`}
	h := startWith(t, "", drv)
	bad := executor(1)
	bad.Spec.NodeName = "worker-7"
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", bad); code != 403 ||
		!strings.Contains(string(body), `spec.nodeName \"worker-7\"`) {
		t.Errorf("executor with nodeName: %d %s", code, body)
	}
	if n := h.actions("create", "pods"); n != 0 {
		t.Errorf("an executor with nodeName reached the API server: %d creates", n)
	}
	if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(2)); code != 201 {
		t.Errorf("executor without nodeName: %d %s", code, body)
	}
}
