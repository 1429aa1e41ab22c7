package sidecar

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/vocab"
)

// jvmExecutor is executor id of the JVM that runs application app, named
// with that JVM's prefix as Spark names it.
func jvmExecutor(app string, id int) *corev1.Pod {
	p := executor(id)
	p.Name = app + "-" + p.Name
	p.Labels[vocab.LabelAppID] = app
	return p
}

// collectionDeletes are the label selectors of the collection deletes of
// resource the API server got.
func (h *harness) collectionDeletes(resource string) []string {
	var out []string
	for _, a := range h.client.Actions() {
		// A list action has list restrictions too.
		if d, ok := a.(k8stesting.DeleteCollectionAction); ok && a.GetVerb() == "delete-collection" && d.GetResource().Resource == resource {
			out = append(out, d.GetListRestrictions().Labels.String())
		}
	}
	return out
}

// waitCollectionDelete waits for a collection delete of resource with
// label selector want.
func (h *harness) waitCollectionDelete(resource, want string) {
	h.t.Helper()
	parsed, err := labels.Parse(want)
	if err != nil {
		h.t.Fatal(err)
	}
	sel := parsed.String()
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, s := range h.collectionDeletes(resource) {
			if s == sel {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		h.t.Fatalf("no collection delete of %s with %q; got %q", resource, sel, h.collectionDeletes(resource))
	}
}

// TestAppPerJVM: with SPARKLET_APP_PER_JVM, each JVM's application is the
// id its requests name, once the sidecar checked no other driver has it;
// what the JVMs before left is deleted when the container restarts and
// again when the next JVM names its application, and the next JVM never
// sees the executors of the one before.
func TestAppPerJVM(t *testing.T) {
	sc := newTestSidecar(t, "")
	sc.cfg.AppPerJVM = true
	drv := driver()
	drv.Spec.RestartPolicy = corev1.RestartPolicyAlways
	otherDriver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: testNS,
		Labels: map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: "spark-other"}}}
	h := startSidecar(t, sc, drv, otherDriver)
	jvmEnds := make(chan struct{}, 4)
	sc.apps.whenJVMEnds(func() { jvmEnds <- struct{}{} })
	const jvm1, jvm2 = "spark-0a1b", "spark-2c3d"
	all := vocab.LabelDriverApp + "=" + testApp

	// Before the JVM names its application, it sees no executors.
	if code, body := h.do("GET", "/api/v1/namespaces/spark/pods?labelSelector=spark-role%3Dexecutor", "", nil); code != 200 || strings.Contains(string(body), `"name"`) {
		t.Errorf("list before any application: %d %s", code, body)
	}
	// The first JVM's first executor starts its application.
	code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", jvmExecutor(jvm1, 1))
	var created corev1.Pod
	if code != 201 || json.Unmarshal(body, &created) != nil || created.Labels[vocab.LabelDriverApp] != testApp || created.Labels[vocab.LabelAppID] != jvm1 {
		t.Fatalf("first executor: %d %s", code, body)
	}
	h.waitListed("spark-app-selector%3D"+jvm1+"%2Cspark-role%3Dexecutor", 1)
	h.waitCollectionDelete("pods", all+",spark-app-selector!="+jvm1+",spark-role=executor,!"+vocab.LabelKeptUntil)

	// Another driver's application id is refused.
	if code, body := h.do("GET", "/api/v1/namespaces/spark/pods?watch=false&labelSelector=spark-app-selector%3Dspark-other", "", nil); code != 403 ||
		!strings.Contains(string(body), "belongs to pod other") {
		t.Errorf("another driver's application: %d %s", code, body)
	}

	// The container restarts: what the first JVM left is deleted.
	d, _ := h.client.CoreV1().Pods(testNS).Get(context.Background(), "pi", metav1.GetOptions{})
	// Container timestamps have whole seconds; this JVM ended a while
	// after it named its application.
	ended := metav1.NewTime(time.Now().Add(2 * time.Second))
	d.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", RestartCount: 1,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, FinishedAt: ended}}}}
	if _, err := h.client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"pods", "configmaps", "persistentvolumeclaims"} {
		sel := all
		if r == "pods" {
			sel += ",spark-role=executor,!" + vocab.LabelKeptUntil
		}
		h.waitCollectionDelete(r, sel)
	}
	select {
	case <-jvmEnds:
	default:
		t.Error("the JVM's end was not announced (whenJVMEnds), so the Connect sessions it held would still count")
	}
	select {
	case err := <-h.done:
		t.Fatalf("the sidecar exited when the Spark container restarted: %v", err)
	default:
	}

	// The second JVM names its application in its watch, and never sees
	// the first one's executor, which the fake API server kept.
	h.waitListed("spark-app-selector%3D"+jvm2+"%2Cspark-role%3Dexecutor", 0)
	if code, _ := h.do("GET", "/api/v1/namespaces/spark/pods/"+jvmExecutor(jvm1, 1).Name, "", nil); code != 404 {
		t.Errorf("the first JVM's executor served to the second: %d", code)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "spark-exec-2-conf-map", Labels: map[string]string{vocab.LabelAppID: jvm2}}}
	code, body = h.do("POST", "/api/v1/namespaces/spark/configmaps", "application/json", cm)
	var gotCM corev1.ConfigMap
	if code != 201 || json.Unmarshal(body, &gotCM) != nil || gotCM.Labels[vocab.LabelDriverApp] != testApp {
		t.Errorf("ConfigMap of the second JVM: %d %s", code, body)
	}
	if code, body := h.do("DELETE", "/api/v1/namespaces/spark/configmaps?labelSelector=spark-app-selector%3D"+jvm2, "application/json", nil); code != 200 {
		t.Errorf("ConfigMap collection delete: %d %s", code, body)
	}
	h.waitCollectionDelete("configmaps", all+",spark-app-selector="+jvm2)

	// The pod ends: everything of its applications goes.
	h.cancel()
	if err := <-h.done; err != nil {
		t.Fatalf("sidecar: %v", err)
	}
	h.done <- nil // for the cleanup hook
	h.waitCollectionDelete("pods", all+",spark-role=executor,!"+vocab.LabelKeptUntil)
}

// TestAppPerJVMSidecarRestarted: a sidecar that starts while a JVM runs
// (it was restarted) takes the container's earlier termination as
// handled, re-adopts the running JVM's application, whose executors are
// this driver's, and deletes only what older JVMs left.
func TestAppPerJVMSidecarRestarted(t *testing.T) {
	sc := newTestSidecar(t, "")
	sc.cfg.AppPerJVM = true
	drv := driver()
	drv.Spec.RestartPolicy = corev1.RestartPolicyAlways
	drv.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
			FinishedAt: metav1.NewTime(time.Now().Add(-time.Minute))}}}}
	const running = "spark-4e5f"
	exec := jvmExecutor(running, 1)
	exec.Namespace = testNS
	exec.Labels[vocab.LabelDriverApp] = testApp
	exec.Status.Phase = corev1.PodRunning
	h := startSidecar(t, sc, drv, exec)

	h.waitListed("spark-app-selector%3D"+running+"%2Cspark-role%3Dexecutor", 1)
	all := vocab.LabelDriverApp + "=" + testApp
	h.waitCollectionDelete("pods", all+",spark-app-selector!="+running+",spark-role=executor,!"+vocab.LabelKeptUntil)
	for _, sel := range h.collectionDeletes("pods") {
		if !strings.Contains(sel, "!="+running) {
			t.Errorf("collection delete %q would delete the running JVM's executors", sel)
		}
	}
}
