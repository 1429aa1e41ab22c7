package sidecar

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// uiService is the Service for the driver's Spark UI when it was asked
// for: by the pod's sparklet.io/ui annotation ("true" or "false"), else by
// the policy's ui.service (the namespace's, else the cluster's). It is nil
// otherwise, or when the UI is off or on a random port.
func uiService(facts *patches.DriverFacts, pol *policy.Effective, appID string) (*corev1.Service, error) {
	driver := facts.Pod
	// The webhook refused other values of the annotation.
	want := pol.UIService
	if v, ok := driver.Annotations[vocab.AnnotationUI]; ok {
		want = strings.EqualFold(v, "true")
	}
	if !want {
		return nil, nil
	}
	if facts.ConfErr != nil {
		return nil, facts.ConfErr
	}
	port := patches.UIPort(facts.Conf)
	if port == 0 {
		return nil, fmt.Errorf("the Spark UI is off or on a random port (spark.ui.enabled=false or spark.ui.port=0), so there is no port to expose; set spark.ui.port")
	}
	yes := true
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      uiServiceName(driver.Name),
			Namespace: driver.Namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "sparklet", vocab.LabelUIFor: driver.Name},
			// Owned by the driver pod: the garbage collector deletes the
			// Service with the pod.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID, Controller: &yes}},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: appID},
			Ports:    []corev1.ServicePort{{Name: patches.UIPortName, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}},
		},
	}, nil
}

// uiServiceName is "<pod>-ui", cut to a Service name's 63 characters.
func uiServiceName(pod string) string {
	name := pod
	if len(name) > 60 {
		name = strings.TrimRight(name[:60], "-.")
	}
	return name + "-ui"
}

// UIURL is the in-cluster address of the Spark UI behind svc.
func UIURL(svc *corev1.Service) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, svc.Namespace, svc.Spec.Ports[0].Port)
}

// uiIngress is the Ingress for the UI Service from the policy's template,
// owned by the same pod; nil without a template.
func uiIngress(svc *corev1.Service, tmpl *policy.UIIngress, appID string) *networkingv1.Ingress {
	if tmpl == nil {
		return nil
	}
	owner := svc.OwnerReferences[0]
	host := tmpl.UIHost(owner.Name, svc.Namespace, appID)
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels, Annotations: tmpl.Annotations,
			OwnerReferences: svc.OwnerReferences},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc.Name,
					Port: networkingv1.ServiceBackendPort{Name: patches.UIPortName}}}}}}}}}},
	}
	if tmpl.IngressClassName != "" {
		class := tmpl.IngressClassName
		ing.Spec.IngressClassName = &class
	}
	if tmpl.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: tmpl.TLSSecretName}}
	}
	return ing
}

// ingressURL is the address the Ingress serves the UI at.
func ingressURL(ing *networkingv1.Ingress) string {
	scheme := "http"
	if len(ing.Spec.TLS) > 0 {
		scheme = "https"
	}
	return scheme + "://" + ing.Spec.Rules[0].Host + "/"
}

// exposeUI creates the UI Service when asked for, and the Ingress when the
// policy has a template, records the URL (the Ingress's if any) in the
// driver's sparklet.io/ui-url annotation and says so in an Event. A
// failure is a Warning Event, never the driver's failure.
func exposeUI(ctx context.Context, client kubecore.Interface, facts *patches.DriverFacts, pol *policy.Effective, appID string, events *recorder) {
	driver := facts.Pod
	svc, err := uiService(facts, pol, appID)
	if err != nil {
		events.warning("SparkUIFailed", "no Spark UI Service: "+err.Error())
		return
	}
	if svc == nil {
		return
	}
	_, err = client.Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		events.warning("SparkUIFailed", fmt.Sprintf("create Service %s for the Spark UI: %v", svc.Name, err))
		return
	}
	url := UIURL(svc)
	if ing := uiIngress(svc, pol.UIIngress, appID); ing != nil {
		_, err := client.Ingresses(ing.Namespace).Create(ctx, ing, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			events.warning("SparkUIFailed", fmt.Sprintf("create Ingress %s for the Spark UI: %v", ing.Name, err))
		} else {
			url = ingressURL(ing)
		}
	}
	if err := annotatePod(ctx, client, driver.Namespace, driver.Name, vocab.AnnotationUIURL, url); err != nil {
		events.warning("SparkUIFailed", fmt.Sprintf("annotate the driver with the Spark UI's URL %s: %v", url, err))
		return
	}
	events.normal("SparkUI", fmt.Sprintf("the Spark UI is at %s (Service %s); or: kubectl port-forward -n %s svc/%s %d",
		url, svc.Name, svc.Namespace, svc.Name, svc.Spec.Ports[0].Port))
}
