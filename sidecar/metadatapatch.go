package sidecar

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/vocab"
)

// protectedLabels may not be changed through the sidecar: they scope what
// it serves.
var protectedLabels = []string{vocab.LabelAppID, vocab.LabelRole, vocab.LabelDriverApp}

// checkMetadataPatch allows patches that only touch labels and annotations
// (and resourceVersion, which fabric8's edit diff adds as a lock).
func checkMetadataPatch(pt types.PatchType, body []byte) error {
	switch pt {
	case types.JSONPatchType:
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal(body, &ops); err != nil {
			return fmt.Errorf("json patch: %w", err)
		}
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" {
				continue
			}
			if !strings.HasPrefix(op.Path, "/metadata/labels") && !strings.HasPrefix(op.Path, "/metadata/annotations") {
				return fmt.Errorf("the sidecar forwards only label and annotation patches; %s %s is not one", op.Op, op.Path)
			}
			for _, l := range protectedLabels {
				if op.Path == "/metadata/labels" || op.Path == "/metadata/labels/"+escapePointer(l) {
					return fmt.Errorf("label %s scopes the sidecar and cannot be changed", l)
				}
			}
		}
		return nil
	case types.MergePatchType, types.StrategicMergePatchType:
		var obj map[string]map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return fmt.Errorf("the sidecar forwards only patches of metadata.labels and metadata.annotations: %w", err)
		}
		for k := range obj {
			if k != "metadata" {
				return fmt.Errorf("the sidecar forwards only metadata patches; %q is not one", k)
			}
		}
		for k, v := range obj["metadata"] {
			switch k {
			case "annotations", "resourceVersion":
			case "labels":
				var l map[string]any
				if err := json.Unmarshal(v, &l); err != nil {
					return fmt.Errorf("metadata.labels: %w", err)
				}
				for _, p := range protectedLabels {
					if _, ok := l[p]; ok {
						return fmt.Errorf("label %s scopes the sidecar and cannot be changed", p)
					}
				}
			default:
				return fmt.Errorf("the sidecar forwards only label and annotation patches; metadata.%s is not one", k)
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported patch type %q: use application/json-patch+json, merge-patch+json or strategic-merge-patch+json", pt)
}

func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
