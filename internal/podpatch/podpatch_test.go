package podpatch

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
)

const podWithFutureFields = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},
"spec":{"someFutureField":{"x":1},"containers":[{"name":"c","image":"i","futureContainerField":true}]}}`

func apply(t *testing.T, raw string, mutate func(*corev1.Pod) error) map[string]any {
	t.Helper()
	ops, err := Mutate([]byte(raw), mutate)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(ops)
	p, err := jsonpatch.DecodePatch(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestUnknownFieldsSurvive(t *testing.T) {
	obj := apply(t, podWithFutureFields, func(p *corev1.Pod) error {
		p.Labels["added"] = "yes"
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "E", Value: "v"})
		return nil
	})
	spec := obj["spec"].(map[string]any)
	if _, ok := spec["someFutureField"]; !ok {
		t.Error("spec.someFutureField was removed")
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	if _, ok := c["futureContainerField"]; !ok {
		t.Error("containers[0].futureContainerField was removed")
	}
	if _, ok := c["env"]; !ok {
		t.Error("the mutation was not applied")
	}
	if obj["metadata"].(map[string]any)["labels"].(map[string]any)["added"] != "yes" {
		t.Error("label not added")
	}
}

func TestNoChangeNoPatch(t *testing.T) {
	ops, err := Mutate([]byte(podWithFutureFields), func(*corev1.Pod) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 0 {
		t.Errorf("unchanged pod gave ops %v", ops)
	}
}

func TestRealRemovalsKept(t *testing.T) {
	obj := apply(t, podWithFutureFields, func(p *corev1.Pod) error {
		delete(p.Labels, "a")
		return nil
	})
	labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
	if _, ok := labels["a"]; ok {
		t.Error("a removal the mutation made was dropped")
	}
}
