package sidecar

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sparklet/sparklet/vocab"
)

// selectors are a request's label and field selectors.
type selectors struct {
	labels labels.Selector
	fields fields.Selector
}

// parseSelectors parses the labelSelector and fieldSelector parameters,
// allowing only the pod fields the API server can select on.
func parseSelectors(labelSelector, fieldSelector string) (selectors, error) {
	ls, err := labels.Parse(labelSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
	}
	fs, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: %v", err))
	}
	for _, req := range fs.Requirements() {
		switch req.Field {
		case "metadata.name", "metadata.namespace", "status.phase", "spec.nodeName", "spec.restartPolicy":
		default:
			return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: field %q is not supported for pods", req.Field))
		}
	}
	return selectors{labels: ls, fields: fs}, nil
}

func (s selectors) matches(p *cachedPod) bool {
	return s.labels.Matches(labels.Set(p.Labels)) && s.fields.Matches(fields.Set{
		"metadata.name": p.Name, "metadata.namespace": p.Namespace, "status.phase": string(p.Phase),
		"spec.nodeName": p.NodeName, "spec.restartPolicy": string(p.RestartPolicy),
	})
}

// driverOnly reports whether the field selector asks for the driver pod by
// name, as fabric8's waitUntilReady does.
func (s selectors) driverOnly(driver string) bool {
	v, ok := s.fields.RequiresExactMatch("metadata.name")
	return ok && v == driver
}

// app is the application the label selector names, or "".
func (s selectors) app() string {
	v, _ := s.labels.RequiresExactMatch(vocab.LabelAppID)
	return v
}
