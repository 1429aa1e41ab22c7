package realspark

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

// connectServiceName is the Service the sidecar makes for
// examples/connect-deployment.yaml, whose template asks for one.
const connectServiceName = "spark-connect-connect"

// waitConnectService waits until the Connect server's Service has pod
// among its owners and its endpoints, on port 15002, and the pod's
// sparklet.io/connect-url names it.
func waitConnectService(t *testing.T, ns string, pod *corev1.Pod) {
	t.Helper()
	waitForPod(t, ns, pod.Name, "Service "+connectServiceName+" owned by the pod, with it as an endpoint", 2*time.Minute, func() bool {
		ctx := context.Background()
		svc, err := env.Client.CoreV1().Services(ns).Get(ctx, connectServiceName, metav1.GetOptions{})
		if err != nil || !slices.ContainsFunc(svc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == pod.UID }) {
			return false
		}
		eps, err := env.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + connectServiceName})
		if err != nil {
			return false
		}
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.TargetRef.UID == pod.UID && len(s.Ports) == 1 && *s.Ports[0].Port == 15002 {
					p, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
					return err == nil && p.Annotations[vocab.AnnotationConnectURL] == "sc://"+connectServiceName+"."+ns+".svc:15002"
				}
			}
		}
		return false
	})
}

// waitConnectServiceGone waits until the garbage collector has deleted the
// Service once the last pod that owns it is gone.
func waitConnectServiceGone(t *testing.T, ns, pod string) {
	t.Helper()
	waitForPod(t, ns, pod, "Service "+connectServiceName+" deleted with the server's last pod", 2*time.Minute, func() bool {
		_, err := env.Client.CoreV1().Services(ns).Get(context.Background(), connectServiceName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
