package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/vocab"
)

const resizePath = "/api/v1/namespaces/spark/pods/pi-exec-1/resize"

const capPolicy = "limits: {executor: {maxMemory: 1Gi}}"

// sparkResize is the body Spark 4.3.0's ExecutorResizePlugin sends: a
// fabric8 PodBuilder with an empty metadata and the Spark container's
// memory request and limit in bytes (Quantity of Long.toString).
func sparkResize(container string, bytes int64) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{},"spec":{"containers":[{"name":%q,`+
		`"resources":{"limits":{"memory":"%d"},"requests":{"memory":"%d"}}}]}}`, container, bytes, bytes)
}

// sizedExecutor is a running executor of the application whose Spark
// container has memory as its request and limit.
func sizedExecutor(id int, memory string) *corev1.Pod {
	p := executorIn(id, corev1.PodRunning)
	q := resource.MustParse(memory)
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: q, corev1.ResourceCPU: resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: q},
	}
	return p
}

// TestExecutorResizedWithinPolicy: the JVM's resize of its executor is
// made by the sidecar on the pods/resize subresource, with the memory the
// JVM asked for as request and limit, and an Event says so.
func TestExecutorResizedWithinPolicy(t *testing.T) {
	h := start(t, capPolicy, sizedExecutor(1, "896Mi"))
	h.waitListed("spark-role%3Dexecutor", 1)
	grown := int64(1033476505) // 896Mi x 1.1, Spark's default step
	code, body := h.do(http.MethodPatch, resizePath, strategic, sparkResize("spark-kubernetes-executor", grown))
	if code != http.StatusOK {
		t.Fatalf("resize: %d %s", code, body)
	}
	var out corev1.Pod
	if err := json.Unmarshal(body, &out); err != nil || out.Kind != "Pod" {
		t.Fatalf("answer is not a Pod: %v %s", err, body)
	}
	var patches []k8stesting.PatchAction
	for _, a := range h.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			patches = append(patches, p)
		}
	}
	if len(patches) != 1 || patches[0].GetSubresource() != "resize" || patches[0].GetName() != "pi-exec-1" {
		t.Fatalf("patches that reached the API server: %v, want one of pi-exec-1/resize", patches)
	}
	pod, err := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi-exec-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := pod.Spec.Containers[0].Resources
	if res.Limits.Memory().Value() != grown || res.Requests.Memory().Value() != grown {
		t.Errorf("executor resources after the resize: %v, want memory %d as request and limit", res, grown)
	}
	if res.Requests.Cpu().String() != "1" {
		t.Errorf("the resize changed the CPU request: %v", res.Requests)
	}
	waitEvent(t, h.client, "ExecutorResized", func(e corev1.Event) bool {
		return strings.Contains(e.Message, "pi-exec-1 resized to memory 1033476505")
	})
}

// TestExecutorResizeRefusals: what the sidecar refuses, each with a 403
// Status whose message names the rule, and none reaches the API server.
func TestExecutorResizeRefusals(t *testing.T) {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: testNS},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("1Gi")},
			Used: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("960Mi")}}}
	kueueDriver := driver()
	kueueDriver.Annotations = map[string]string{vocab.AnnotationScheduling: `{"scheduler":"kueue","queue":"lq"}`}
	infeasible := sizedExecutor(1, "896Mi")
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory, requested: 990000000, capacity: 900000000"}}
	ok := sparkResize("spark-kubernetes-executor", 1000<<20)
	for _, tc := range []struct {
		name, policy, contentType, path string
		driver                          *corev1.Pod
		objects                         []runtime.Object
		body                            []byte
		code                            int
		refused                         string
	}{
		{name: "over limits.executor.maxMemory", body: sparkResize("spark-kubernetes-executor", 1100<<20),
			refused: "over the policy limit limits.executor.maxMemory=1Gi"},
		{name: "smaller", body: sparkResize("spark-kubernetes-executor", 512<<20), refused: "only grows executors"},
		{name: "another container", body: sparkResize("istio-proxy", 1000<<20), refused: `not "istio-proxy"`},
		{name: "cpu", body: []byte(`{"spec":{"containers":[{"name":"spark-kubernetes-executor","resources":{"requests":{"cpu":"2"}}}]}}`),
			refused: "memory only, not cpu"},
		{name: "request without limit", body: []byte(`{"spec":{"containers":[{"name":"spark-kubernetes-executor","resources":{"requests":{"memory":"1000Mi"}}}]}}`),
			refused: "must both be set and equal"},
		{name: "a label too", body: []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"spark-kubernetes-executor","resources":{"requests":{"memory":"1000Mi"},"limits":{"memory":"1000Mi"}}}]}}`),
			refused: "not metadata"},
		{name: "the image too", body: []byte(`{"spec":{"containers":[{"name":"spark-kubernetes-executor","image":"evil","resources":{"requests":{"memory":"1000Mi"},"limits":{"memory":"1000Mi"}}}]}}`),
			refused: "not spec.containers[].image"},
		{name: "json patch", contentType: jsonPatch, body: []byte(`[{"op":"replace","path":"/spec/containers/0/resources/limits/memory","value":"1000Mi"}]`),
			refused: `patch type "application/json-patch+json"`},
		{name: "quota headroom", objects: []runtime.Object{quota}, body: ok,
			refused: "would exceed ResourceQuota team (limits.memory: 960Mi used of 1Gi, 64Mi left)"},
		{name: "kueue", driver: kueueDriver, body: ok, refused: "batch scheduler kueue"},
		{name: "enforced overhead", policy: "spark: {enforced: {spark.executor.memoryOverhead: 384m}}", body: ok,
			refused: "the policy enforces spark.executor.memoryOverhead=384m"},
		{name: "infeasible on its node", objects: []runtime.Object{infeasible}, body: ok,
			refused: "its node cannot resize it in place (PodResizePending Infeasible: Node didn't have enough capacity"},
		{name: "the driver", path: "/api/v1/namespaces/spark/pods/pi/resize", body: ok, refused: "executors only"},
		{name: "another app's pod", path: "/api/v1/namespaces/spark/pods/other/resize", body: ok, code: 404},
		{name: "another namespace", path: "/api/v1/namespaces/other/pods/pi-exec-1/resize", body: ok, refused: `only namespace "spark"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := capPolicy
			if tc.policy != "" {
				pol = tc.policy
			}
			drv := driver()
			if tc.driver != nil {
				drv = tc.driver
			}
			objects := tc.objects
			if len(objects) == 0 || objects[0] != runtime.Object(infeasible) {
				objects = append(objects, sizedExecutor(1, "896Mi"))
			}
			h := startWith(t, pol, drv, objects...)
			h.waitListed("spark-role%3Dexecutor", 1)
			path, ct := resizePath, strategic
			if tc.path != "" {
				path = tc.path
			}
			if tc.contentType != "" {
				ct = tc.contentType
			}
			code, body := h.do(http.MethodPatch, path, ct, tc.body)
			wantRefusal(t, code, body, tc.code, tc.refused)
			for _, a := range h.client.Actions() {
				if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" {
					t.Errorf("a refused resize reached the API server: %v", a)
				}
			}
		})
	}
}

// TestRefusedResizeIsAnEvent: the refusal Spark logs only at info level
// is also a Warning Event on the driver pod.
func TestRefusedResizeIsAnEvent(t *testing.T) {
	h := start(t, capPolicy, sizedExecutor(1, "896Mi"))
	h.waitListed("spark-role%3Dexecutor", 1)
	if code, _ := h.do(http.MethodPatch, resizePath, strategic, sparkResize("spark-kubernetes-executor", 1100<<20)); code != 403 {
		t.Fatalf("resize over the cap: %d, want 403", code)
	}
	waitEvent(t, h.client, "ExecutorResizeRefused", func(e corev1.Event) bool { return strings.Contains(e.Message, "limits.executor.maxMemory=1Gi") })
}

// TestPodMetricsOfExecutorsOnly: the metrics the resize plugin reads are
// served for this application's executors, from the API server, and for
// nothing else.
func TestPodMetricsOfExecutorsOnly(t *testing.T) {
	client := fake.NewClientset(driver(), sizedExecutor(1, "896Mi"))
	metrics := `{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":"pi-exec-1","namespace":"spark"},` +
		`"timestamp":"2026-11-27T10:00:00Z","window":"10s","containers":[{"name":"spark-kubernetes-executor","usage":{"cpu":"1m","memory":"900Mi"}}]}`
	var asked []string
	sc := newTestSidecar(t, "")
	h := startFakeCore(t, sc, client, func(ns, name string) ([]byte, error) {
		asked = append(asked, ns+"/"+name)
		return []byte(metrics), nil
	})
	h.waitListed("spark-role%3Dexecutor", 1)
	code, body := h.do(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/spark/pods/pi-exec-1", "", nil)
	if code != 200 || string(body) != metrics {
		t.Errorf("metrics of pi-exec-1: %d %s", code, body)
	}
	for _, path := range []string{
		"/apis/metrics.k8s.io/v1beta1/namespaces/spark/pods/pi",
		"/apis/metrics.k8s.io/v1beta1/namespaces/spark/pods/other",
		"/apis/metrics.k8s.io/v1beta1/namespaces/other/pods/pi-exec-1",
		"/apis/metrics.k8s.io/v1beta1/namespaces/spark/pods",
		"/apis/metrics.k8s.io/v1beta1/nodes",
	} {
		if code, body := h.do(http.MethodGet, path, "", nil); code != 403 && code != 404 {
			t.Errorf("GET %s: %d %s, want 403 or 404", path, code, body)
		}
	}
	if len(asked) != 1 || asked[0] != "spark/pi-exec-1" {
		t.Errorf("metrics asked of the API server: %v, want spark/pi-exec-1 only", asked)
	}
}

// startFakeCore is startFake with metrics answered by metrics.
func startFakeCore(t *testing.T, sc *Sidecar, client *fake.Clientset, metrics func(ns, name string) ([]byte, error)) *harness {
	t.Helper()
	core := kubecoretest.New(client)
	core.Metrics = metrics
	return startCore(t, sc, client, core)
}

// TestAPIServersResizeRefusalIsPassedOn: the API server's refusal (here a
// node without in-place resize) reaches the JVM with its code, naming the
// executor and the size asked for.
func TestAPIServersResizeRefusalIsPassedOn(t *testing.T) {
	client := fake.NewClientset(driver(), sizedExecutor(1, "896Mi"))
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "resize" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "pi-exec-1",
			field.ErrorList{field.Forbidden(field.NewPath("spec"), "Pod running on node without support for resize")})
	})
	h := startFake(t, newTestSidecar(t, capPolicy), client)
	h.waitListed("spark-role%3Dexecutor", 1)
	code, body := h.do(http.MethodPatch, resizePath, strategic, sparkResize("spark-kubernetes-executor", 1033476505))
	var st metav1.Status
	_ = json.Unmarshal(body, &st)
	want := `executor "pi-exec-1": the API server refused its resize to memory 1033476505: Pod "pi-exec-1" is invalid: spec: Forbidden: Pod running on node without support for resize`
	if code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != want {
		t.Errorf("answer %d %s %q, want 422 Invalid %q", code, st.Reason, st.Message, want)
	}
	waitEvent(t, h.client, "ExecutorResizeRefused", func(e corev1.Event) bool { return e.Message == want })
}

// wantRefusal wants an answer that is a Status of code (403 when 0)
// whose message says refused.
func wantRefusal(t *testing.T, code int, body []byte, want int, refused string) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("answer is not a Status: %d %s", code, body)
	}
	if want == 0 {
		want = http.StatusForbidden
	}
	if code != want || st.Code != int32(want) || !strings.Contains(st.Message, refused) {
		t.Errorf("answer %d %q, want %d saying %q", code, st.Message, want, refused)
	}
}
