package sidecar

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/internal/kubecore"
)

// annotatePod sets one annotation on a pod by a merge patch, as the
// addresses the sidecar records on its driver (UI, Connect, history).
func annotatePod(ctx context.Context, client kubecore.Interface, namespace, pod, key, value string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	_, err := client.Pods(namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}
