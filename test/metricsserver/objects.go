package metricsserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

const (
	namespace  = "kube-system"
	name       = "metrics-server"
	apiService = "v1beta1.metrics.k8s.io"
	// serverName is the name the API server verifies an APIService's
	// serving certificate for: <service>.<namespace>.svc (kube-aggregator
	// v0.37.2, pkg/controllers/status/remote/remote_available_controller.go,
	// BuildTransportConfig).
	serverName = name + "." + namespace + ".svc"
	// user is metrics-server's identity (its client certificate's CN); its
	// own manifests run it as the ServiceAccount kube-system/metrics-server.
	user = "metrics-server"
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// register creates what metrics-server's manifests create (v0.9.0,
// manifests/base/rbac.yaml, service.yaml, apiservice.yaml), bound to user:
// the roles to scrape kubelets and list nodes and pods, to read the API
// server's front-proxy CA and to delegate authentication and
// authorisation, and the role that lets viewers read metrics. The
// Service has no selector: its EndpointSlice names the process at Host.
// The APIService carries the cluster CA, where the manifests skip TLS
// verification.
func (m *MetricsServer) register(ctx context.Context, port int) error {
	client := m.opts.Cluster.Client()
	rbac := client.RbacV1()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	clusterRole := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	creates := []func() error{
		func() error {
			_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-server"},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
					{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
				}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregated-metrics-reader",
				Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true",
					"rbac.authorization.k8s.io/aggregate-to-edit": "true", "rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-server"},
				RoleRef: clusterRole("system:metrics-server"), Subjects: subject}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server:system:auth-delegator"},
				RoleRef: clusterRole("system:auth-delegator"), Subjects: subject}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := rbac.RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-auth-reader"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
				Subjects: subject}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().Services(namespace).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(port))}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.DiscoveryV1().EndpointSlices(namespace).Create(ctx, &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{m.opts.Host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error { return m.createAPIService(ctx) },
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register metrics-server: %w", err)
		}
	}
	return nil
}

func (m *MetricsServer) createAPIService(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(m.opts.Cluster.RESTConfig())
	if err != nil {
		return err
	}
	ca, _ := m.opts.Cluster.CA()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": apiService},
		"spec": map[string]any{
			"service": map[string]any{"name": name, "namespace": namespace, "port": int64(443)},
			"group":   "metrics.k8s.io", "version": "v1beta1",
			"caBundle":             base64.StdEncoding.EncodeToString(ca),
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	_, err = dyn.Resource(apiServiceGVR).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func (m *MetricsServer) unregister(ctx context.Context) {
	dyn, err := dynamic.NewForConfig(m.opts.Cluster.RESTConfig())
	if err != nil {
		return
	}
	_ = dyn.Resource(apiServiceGVR).Delete(ctx, apiService, metav1.DeleteOptions{})
}

// waitServing waits until the API server reports the APIService
// Available and serves the node's NodeMetrics from metrics-server, which
// takes two scrapes of the kubelet.
func (m *MetricsServer) waitServing(ctx context.Context) error {
	path := "/apis/metrics.k8s.io/v1beta1/nodes/" + m.opts.Node
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		_, last = m.opts.Cluster.Client().CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the API server never served %s from metrics-server (last: %v): %w\n%s", path, last, err, m.Logs(30))
	}
	return nil
}
