package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// connectPortName names the Connect port on the Service.
const connectPortName = "spark-connect"

// wantsConnectService tells whether a Service was asked for: by the pod's
// sparklet.io/connect-service annotation, else by the policy's
// connect.service.
func wantsConnectService(pod *corev1.Pod, pol *policy.Effective) bool {
	if v, ok := pod.Annotations[vocab.AnnotationConnectService]; ok {
		return strings.EqualFold(v, "true")
	}
	return pol.Connect.Service != nil && *pol.Connect.Service
}

// ConnectService is the Service in front of every pod of the Connect
// server driver is one of, "<server>-connect", selecting them by the
// label the webhook wrote. Each pod's sidecar adds its pod as an owner,
// none the controller: the garbage collector deletes the Service once the
// last of them is gone, so it outlives a rollout and a restart.
func ConnectService(driver *corev1.Pod, cleartext bool) (*corev1.Service, error) {
	server := driver.Labels[vocab.LabelConnectServer]
	if server == "" {
		return nil, fmt.Errorf("the pod has no %s label, which the webhook writes on Spark Connect servers; was it injected by an older sparklet?", vocab.LabelConnectServer)
	}
	port := corev1.ServicePort{Name: connectPortName, Port: patches.ConnectPort, TargetPort: intstr.FromInt32(patches.ConnectPort), Protocol: corev1.ProtocolTCP}
	if cleartext {
		// gRPC over cleartext HTTP/2, for gateways and meshes.
		h2c := "kubernetes.io/h2c"
		port.AppProtocol = &h2c
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            connectServiceName(server),
			Namespace:       driver.Namespace,
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "sparklet", vocab.LabelConnectServer: server},
			OwnerReferences: []metav1.OwnerReference{podOwner(driver)},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{vocab.LabelRole: "driver", vocab.LabelConnectServer: server},
			Ports:    []corev1.ServicePort{port},
		},
	}, nil
}

// podOwner refers to pod as one owner among others.
func podOwner(pod *corev1.Pod) metav1.OwnerReference {
	no := false
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &no, BlockOwnerDeletion: &no}
}

// connectServiceName is "<server>-connect", cut to a Service name's 63
// characters.
func connectServiceName(server string) string {
	if len(server) > 55 {
		server = strings.TrimRight(server[:55], "-.")
	}
	return server + "-connect"
}

// ConnectURL is the in-cluster address of a Connect Service, as a client's
// connection string starts.
func ConnectURL(svc *corev1.Service) string {
	return fmt.Sprintf("sc://%s.%s.svc:%d", svc.Name, svc.Namespace, svc.Spec.Ports[0].Port)
}

// exposeConnect creates the Connect server's Service when asked for, or
// adds the driver pod to the owners of the one another pod of the server
// made, records its address in the pod's sparklet.io/connect-url and says
// so in an Event; then the GRPCRoute the policy may ask for
// (connectroute.go). A failure is a Warning Event, never the driver's
// failure.
func exposeConnect(ctx context.Context, client kubecore.Interface, driver *corev1.Pod, pol *policy.Effective, cleartext bool, events *recorder) {
	if !wantsConnectService(driver, pol) {
		return
	}
	svc, err := ConnectService(driver, cleartext)
	if err != nil {
		events.warning("SparkConnectServiceFailed", "no Spark Connect Service: "+err.Error())
		return
	}
	services := client.Services(svc.Namespace)
	_, err = services.Create(ctx, svc, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		// ownerReferences merge by uid in a strategic merge patch.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": svc.OwnerReferences}})
		_, err = services.Patch(ctx, svc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	}
	if err != nil {
		events.warning("SparkConnectServiceFailed", fmt.Sprintf("create Service %s for Spark Connect clients: %v", svc.Name, err))
		return
	}
	url := ConnectURL(svc)
	if err := annotatePod(ctx, client, driver.Namespace, driver.Name, vocab.AnnotationConnectURL, url); err != nil {
		events.warning("SparkConnectServiceFailed", fmt.Sprintf("annotate the driver with the Spark Connect address %s: %v", url, err))
		return
	}
	events.normal("SparkConnectService", fmt.Sprintf("Spark Connect clients reach this server's pods at %s (Service %s); or: kubectl port-forward -n %s svc/%s %d",
		url, svc.Name, svc.Namespace, svc.Name, patches.ConnectPort))
	exposeRoute(ctx, client, driver, svc, pol, events)
}
