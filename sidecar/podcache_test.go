package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sparklet/sparklet/vocab"
)

// fullExecutor is an executor with the fields Spark reads and a
// managedFields entry, as the API server returns it once it runs.
func fullExecutor(id int) *corev1.Pod {
	p := executorIn(id, corev1.PodRunning)
	p.Namespace, p.UID = testNS, "exec-uid"
	p.Annotations = map[string]string{"note": "kept"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "pi", UID: "driver-uid"}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{}}}`)}}
	p.Spec.NodeName = "node-1"
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SPARK_EXECUTOR_ID", Value: fmt.Sprint(id)}}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1408Mi")}
	p.Status.PodIP = "10.0.0.7"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark-kubernetes-executor", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(1700000000, 0))}}}}
	return p
}

// TestServedPodIsWholeLessManagedFields checks that GET, LIST and watch
// serve the pod as the API server holds it, field for field, except for
// metadata.managedFields, though the executor cache keeps a slim pod.
func TestServedPodIsWholeLessManagedFields(t *testing.T) {
	h := start(t, "", fullExecutor(1))
	h.waitListed("spark-role%3Dexecutor", 1)
	want := fullExecutor(1)
	want.ManagedFields = nil
	want.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	same := func(what string, got *corev1.Pod) {
		t.Helper()
		got.ResourceVersion = "" // the fake clientset sets none; compare the rest
		if !equality.Semantic.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s:\n got %s\nwant %s", what, g, w)
		}
	}

	code, body := h.do(http.MethodGet, "/api/v1/namespaces/spark/pods/pi-exec-1", "", nil)
	var got corev1.Pod
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("GET: %d %s", code, body)
	}
	same("GET", &got)

	code, body = h.do(http.MethodGet, "/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor", "", nil)
	var list corev1.PodList
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Items) != 1 {
		t.Fatalf("LIST: %d %s", code, body)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || list.ResourceVersion == "" {
		t.Errorf("LIST: kind %q apiVersion %q resourceVersion %q", list.Kind, list.APIVersion, list.ResourceVersion)
	}
	same("LIST", &list.Items[0])

	// A watch from the start gets the pod as ADDED.
	resp, err := http.NewRequest(http.MethodGet, h.base+"/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor&watch=true&timeoutSeconds=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+h.token)
	r, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var e metav1.WatchEvent
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil || e.Type != "ADDED" {
		t.Fatalf("watch: %v %s", err, e.Type)
	}
	var watched corev1.Pod
	if err := json.Unmarshal(e.Object.Raw, &watched); err != nil {
		t.Fatal(err)
	}
	same("watch", &watched)
}

func TestTransformIsIdempotentAndSlim(t *testing.T) {
	tr := podTransform(false)
	once, err := tr(fullExecutor(1))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := tr(once)
	if err != nil || twice != once {
		t.Fatalf("second transform changed the object: %v", err)
	}
	c := once.(*cachedPod)
	if c.pod != nil || c.Annotations != nil || c.OwnerReferences != nil || c.ManagedFields != nil {
		t.Errorf("an executor's cache entry keeps more than the sidecar reads: %+v", c.podFacts)
	}
	if c.Name != "pi-exec-1" || c.Labels[vocab.LabelRole] != "executor" || c.Phase != corev1.PodRunning || c.NodeName != "node-1" ||
		c.RestartPolicy != corev1.RestartPolicyNever || c.ResourceVersion != "" || c.UID != "exec-uid" {
		t.Errorf("an executor's cache entry lost what the sidecar reads: %+v", c.podFacts)
	}
	if d, _ := podTransform(true)(fullExecutor(1)); d.(*cachedPod).pod == nil || d.(*cachedPod).pod.Status.PodIP != "10.0.0.7" {
		t.Error("the driver's cache entry lost the whole pod")
	}
	full, err := c.decode()
	if err != nil || full.Status.PodIP != "10.0.0.7" || len(full.Spec.Containers) != 1 || full.ManagedFields != nil {
		t.Errorf("decode: %v %+v", err, full)
	}
}

func TestHubRingIsBoundedByBytes(t *testing.T) {
	h := newHub(100, 3000)
	pod := func(rv int) *cachedPod {
		return &cachedPod{podFacts: podFacts{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: fmt.Sprint(rv)}}, json: make([]byte, 1000)}
	}
	for rv := 1; rv <= 10; rv++ {
		h.publish(watch.Modified, pod(rv))
	}
	if len(h.recent) != 3 || h.bytes != 3000 || h.recent[0].rv != 8 {
		t.Fatalf("ring holds %d events, %d bytes, oldest %d; want 3, 3000, 8", len(h.recent), h.bytes, h.recent[0].rv)
	}
	if _, missed, replay := h.subscribe(8); !replay || len(missed) != 2 {
		t.Errorf("resume from 8: replay %v, %d missed; want true, 2", replay, len(missed))
	}
	if _, _, replay := h.subscribe(3); replay {
		t.Error("resume from 3, older than the ring: want the current state, got a replay")
	}
	// One event larger than the bound is still kept: a watch can resume
	// from the version before it.
	big := pod(11)
	big.json = make([]byte, 5000)
	h.publish(watch.Modified, big)
	if len(h.recent) != 1 || h.recent[0].rv != 11 {
		t.Errorf("after a large event the ring holds %d events", len(h.recent))
	}
}

func TestInternerSharesAndIsBounded(t *testing.T) {
	in := &interner{}
	a := in.labels(map[string]string{"spark-role": string([]byte("executor"))})
	b := in.labels(map[string]string{"spark-role": string([]byte("executor"))})
	if unsafe.StringData(a["spark-role"]) != unsafe.StringData(b["spark-role"]) {
		t.Error("equal label values are not shared")
	}
	for i := 0; i < 3*internMax; i++ {
		in.get(fmt.Sprint(i))
	}
	if len(in.strings) != internMax {
		t.Errorf("the interner holds %d strings, want at most %d", len(in.strings), internMax)
	}
}
