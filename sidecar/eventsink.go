package sidecar

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/internal/kubecore"
)

// eventSink writes the EventCorrelator's Events in each Event's own
// namespace, as client-go's typedcorev1.EventSinkImpl does
// (kubernetes/typed/core/v1/event_expansion.go, v0.36): create, update,
// and a strategic merge patch for a repeat's count.
type eventSink struct{ client kubecore.Interface }

func (s eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.client.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
