package podpatch

import (
	"encoding/json"
	"fmt"
	"reflect"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
)

// Mutate decodes raw into a Pod, lets mutate change it, and returns the
// JSON patch from raw to the result. A pod that mutate leaves unchanged
// gives an empty patch.
//
// Decoding and re-encoding drops fields that our k8s.io/api does not know
// (a newer cluster's Pod fields) and adds empty ones (`status: {}`). The ops
// that this round trip alone produces are dropped from the patch, so the
// unknown fields survive and an unchanged pod gives no patch.
// controller-runtime's admission package drops the removals the same way
// (dropSchemeRemovals), after kueue#2878.
//
// The diff runs once, over what changed: the typed pod is compared with a
// copy taken before mutate, and only the changed subtrees are encoded and
// diffed against the request (see differ). An unchanged pod is compared
// field by field and gives no ops.
func Mutate(raw []byte, mutate func(*corev1.Pod) error) ([]jsonpatch.Operation, error) {
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	before := pod.DeepCopy()
	if err := mutate(&pod); err != nil {
		return nil, err
	}
	var d differ
	if err := d.walk("", raw, reflect.ValueOf(before).Elem(), reflect.ValueOf(&pod).Elem()); err != nil {
		return nil, err
	}
	return d.ops, nil
}
