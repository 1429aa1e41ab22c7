package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// recorder writes Events on the driver pod, so `kubectl describe pod`
// tells what the sidecar did.
type recorder struct {
	client kubernetes.Interface
	driver *corev1.Pod
	log    *logrus.Entry
}

func (r *recorder) normal(reason, msg string)  { r.emit(corev1.EventTypeNormal, reason, msg) }
func (r *recorder) warning(reason, msg string) { r.emit(corev1.EventTypeWarning, reason, msg) }

func (r *recorder) emit(kind, reason, msg string) {
	if r == nil || r.driver == nil {
		return
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", r.driver.Name, now.UnixNano()), Namespace: r.driver.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: r.driver.Name, Namespace: r.driver.Namespace, UID: r.driver.UID,
		},
		Reason: reason, Message: msg, Type: kind,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: corev1.EventSource{Component: "sparklet-sidecar"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.client.CoreV1().Events(r.driver.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		r.log.WithError(err).WithField("reason", reason).Warn(fmt.Sprintf("could not record event: %s", msg))
	}
}
