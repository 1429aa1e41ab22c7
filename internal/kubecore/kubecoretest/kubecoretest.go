package kubecoretest

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/internal/kubecore"
)

// Clientset is kubecore.Interface over a client-go clientset.
type Clientset struct {
	kubernetes.Interface
	// Metrics answers PodMetrics; nil answers NotFound, as an API server
	// without metrics-server does.
	Metrics func(namespace, name string) ([]byte, error)
	// Dynamic serves GRPCRoutes: client-go's fake dynamic client, which
	// knows GRPCRoute's list kind, unless a test sets another.
	Dynamic dynamic.Interface
}

// New wraps cs.
func New(cs kubernetes.Interface) *Clientset {
	return &Clientset{Interface: cs, Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kubecore.GRPCRouteResource: "GRPCRouteList"})}
}

func (c *Clientset) GRPCRoutes(ns string) dynamic.ResourceInterface {
	return c.Dynamic.Resource(kubecore.GRPCRouteResource).Namespace(ns)
}

func (c *Clientset) Pods(ns string) kubecore.Collection[*corev1.Pod, *corev1.PodList] {
	return c.CoreV1().Pods(ns)
}

func (c *Clientset) Events(ns string) kubecore.Collection[*corev1.Event, *corev1.EventList] {
	return c.CoreV1().Events(ns)
}

func (c *Clientset) ConfigMaps(ns string) kubecore.Collection[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.CoreV1().ConfigMaps(ns)
}

func (c *Clientset) PersistentVolumeClaims(ns string) kubecore.Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return c.CoreV1().PersistentVolumeClaims(ns)
}

func (c *Clientset) Services(ns string) kubecore.Resource[*corev1.Service, *corev1.ServiceList] {
	return c.CoreV1().Services(ns)
}

func (c *Clientset) Ingresses(ns string) kubecore.Resource[*networkingv1.Ingress, *networkingv1.IngressList] {
	return c.NetworkingV1().Ingresses(ns)
}

func (c *Clientset) ResourceQuotas(ns string) kubecore.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return c.CoreV1().ResourceQuotas(ns)
}

func (c *Clientset) StorageClassExpands(ctx context.Context, name string) (bool, error) {
	class, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return class.AllowVolumeExpansion != nil && *class.AllowVolumeExpansion, nil
}

func (c *Clientset) PodMetrics(_ context.Context, ns, name string) ([]byte, error) {
	if c.Metrics == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, name)
	}
	return c.Metrics(ns, name)
}

func (c *Clientset) TokenReviews() kubecore.Creator[*authenticationv1.TokenReview] {
	return c.AuthenticationV1().TokenReviews()
}

func (c *Clientset) SubjectAccessReviews() kubecore.Creator[*authorizationv1.SubjectAccessReview] {
	return c.AuthorizationV1().SubjectAccessReviews()
}

func (c *Clientset) ServerVersion(context.Context) (*version.Info, error) {
	return c.Discovery().ServerVersion()
}

// IsWatchListSemanticsUnSupported passes on what the clientset says:
// client-go's fake does not support watch-list, and informers must not
// try it (k8s.io/client-go/util/watchlist, v0.36).
func (c *Clientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
