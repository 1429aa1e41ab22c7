package e2e

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// The local API server is Kubernetes 1.37; sparklet is built against
// k8s.io/api v0.36, which has no spec.evictionResponders. The field is
// alpha in 1.37 behind EvictionRequestAPI, which TestMain turns on.
const futureFieldGate = "EvictionRequestAPI"

func TestPodFieldNewerThanOurAPIIsKept(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	if podSpecKnows("evictionResponders") {
		t.Fatal("our k8s.io/api knows spec.evictionResponders now: pick a newer field for this test")
	}
	raw := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"future","labels":{"spark-role":"driver"}},
"spec":{"evictionResponders":[{"name":"example.com/drainer","priority":5000}],
"containers":[{"name":"spark","image":"apache/spark:3.5.4","args":["driver","local:///opt/app/app.jar"]}]}}`)
	if stdout, stderr, err := env.Kubectl(ctx, raw, "create", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl create: %v\n%s%s", err, stdout, stderr)
	}
	out, stderr, err := env.Kubectl(ctx, nil, "get", "pod", "-n", ns, "future", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, stderr)
	}
	stored := []byte(out)
	var obj struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(stored, &obj); err != nil {
		t.Fatal(err)
	}
	if got := string(obj.Spec["evictionResponders"]); !strings.Contains(got, "example.com/drainer") {
		t.Errorf("spec.evictionResponders was lost through the webhook; stored spec: %s", stored)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(stored, &pod); err != nil {
		t.Fatal(err)
	}
	requireInjected(t, &pod)
	if !strings.Contains(pod.Annotations[vocab.AnnotationStatus], "sparklet-sidecar") {
		t.Error("pod was not injected")
	}
}

// podSpecKnows reports whether our PodSpec type has a field of that JSON name.
func podSpecKnows(name string) bool {
	t := reflect.TypeOf(corev1.PodSpec{})
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("json"), ",")[0] == name {
			return true
		}
	}
	return false
}
