package kubecore

import (
	"context"
	"encoding/json"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Resource is one namespaced core/v1 resource, T its object and L its
// list. The methods are those of client-go's typed clients, so their
// fakes serve in tests (see kubecoretest).
type Resource[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Collection is a Resource whose objects can be deleted by selector.
type Collection[T, L runtime.Object] interface {
	Resource[T, L]
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
}

// Creator is a resource that is only created, such as a review, whose
// answer is the created object's status.
type Creator[T runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// Interface is those resources, a namespace at a time.
type Interface interface {
	Pods(namespace string) Collection[*corev1.Pod, *corev1.PodList]
	Events(namespace string) Collection[*corev1.Event, *corev1.EventList]
	ConfigMaps(namespace string) Collection[*corev1.ConfigMap, *corev1.ConfigMapList]
	PersistentVolumeClaims(namespace string) Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	Services(namespace string) Resource[*corev1.Service, *corev1.ServiceList]
	Ingresses(namespace string) Resource[*networkingv1.Ingress, *networkingv1.IngressList]
	ResourceQuotas(namespace string) Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	// StorageClassExpands is a StorageClass's allowVolumeExpansion.
	StorageClassExpands(ctx context.Context, name string) (bool, error)
	// PodMetrics is the metrics.k8s.io/v1beta1 PodMetrics of one pod, as
	// the API server answers it (from metrics-server, where one runs).
	PodMetrics(ctx context.Context, namespace, name string) ([]byte, error)
	// TokenReviews and SubjectAccessReviews authenticate and authorise
	// Spark Connect clients (sidecar/connectauth.go).
	TokenReviews() Creator[*authenticationv1.TokenReview]
	SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview]
	// ServerVersion is the API server's /version.
	ServerVersion(ctx context.Context) (*version.Info, error)
	// GRPCRoutes are the Gateway API's GRPCRoutes (GRPCRouteResource), as
	// unstructured objects: the sidecar links no Gateway API types
	// (sidecar/connectroute.go).
	GRPCRoutes(namespace string) dynamic.ResourceInterface
}

// GRPCRouteResource is the Gateway API's GRPCRoute, standard since
// gateway-api v1.1.0.
var GRPCRouteResource = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "grpcroutes"}

// client is Interface over a REST client for each group.
type client struct {
	core, networking, authn, authz rest.Interface
	params                         runtime.ParameterCodec
	dynamic                        dynamic.Interface
}

// New returns a client for rc. Each resource prefers protobuf, as
// client-go's typed clients do (gentype.PrefersProtobuf, v0.36).
func New(rc *rest.Config) (Interface, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, networkingv1.AddToScheme, authenticationv1.AddToScheme, authorizationv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	// The options types (ListOptions, DeleteOptions...) as query
	// parameters and bodies, as k8s.io/client-go/kubernetes/scheme
	// registers them.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	restFor := func(gv schema.GroupVersion, apiPath string) (rest.Interface, error) {
		cfg := rest.CopyConfig(rc)
		cfg.GroupVersion, cfg.APIPath, cfg.NegotiatedSerializer = &gv, apiPath, codecs
		if cfg.UserAgent == "" {
			cfg.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		c, err := rest.RESTClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s client: %w", gv, err)
		}
		return c, nil
	}
	groups := []schema.GroupVersion{corev1.SchemeGroupVersion, networkingv1.SchemeGroupVersion,
		authenticationv1.SchemeGroupVersion, authorizationv1.SchemeGroupVersion}
	rcs := make([]rest.Interface, len(groups))
	for i, gv := range groups {
		apiPath := "/apis"
		if gv.Group == "" {
			apiPath = "/api"
		}
		var err error
		if rcs[i], err = restFor(gv, apiPath); err != nil {
			return nil, err
		}
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &client{core: rcs[0], networking: rcs[1], authn: rcs[2], authz: rcs[3], params: runtime.NewParameterCodec(scheme), dynamic: dyn}, nil
}

// resource is the client of one resource of rc's group, O its object
// type and L its list's.
func resource[O, L any, PO interface {
	*O
	runtime.Object
	metav1.Object
}, PL interface {
	*L
	runtime.Object
}](rc rest.Interface, params runtime.ParameterCodec, name, namespace string) *gentype.ClientWithList[PO, PL] {
	return gentype.NewClientWithList(name, rc, params, namespace, func() PO { return new(O) }, func() PL { return new(L) },
		gentype.PrefersProtobuf[PO]())
}

func (c *client) Pods(ns string) Collection[*corev1.Pod, *corev1.PodList] {
	return resource[corev1.Pod, corev1.PodList](c.core, c.params, "pods", ns)
}

func (c *client) Events(ns string) Collection[*corev1.Event, *corev1.EventList] {
	return resource[corev1.Event, corev1.EventList](c.core, c.params, "events", ns)
}

func (c *client) ConfigMaps(ns string) Collection[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return resource[corev1.ConfigMap, corev1.ConfigMapList](c.core, c.params, "configmaps", ns)
}

func (c *client) PersistentVolumeClaims(ns string) Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return resource[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList](c.core, c.params, "persistentvolumeclaims", ns)
}

func (c *client) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return resource[corev1.Service, corev1.ServiceList](c.core, c.params, "services", ns)
}

func (c *client) Ingresses(ns string) Resource[*networkingv1.Ingress, *networkingv1.IngressList] {
	return resource[networkingv1.Ingress, networkingv1.IngressList](c.networking, c.params, "ingresses", ns)
}

func (c *client) ResourceQuotas(ns string) Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return resource[corev1.ResourceQuota, corev1.ResourceQuotaList](c.core, c.params, "resourcequotas", ns)
}

// StorageClassExpands GETs the StorageClass as JSON and reads the one
// field the sidecar needs, so that the sidecar links no storage.k8s.io
// types.
func (c *client) StorageClassExpands(ctx context.Context, name string) (bool, error) {
	body, err := c.core.Get().AbsPath("/apis/storage.k8s.io/v1/storageclasses", name).
		SetHeader("Accept", "application/json").Do(ctx).Raw()
	if err != nil {
		return false, err
	}
	var class struct {
		AllowVolumeExpansion *bool `json:"allowVolumeExpansion"`
	}
	if err := json.Unmarshal(body, &class); err != nil {
		return false, fmt.Errorf("decode StorageClass %s: %w", name, err)
	}
	return class.AllowVolumeExpansion != nil && *class.AllowVolumeExpansion, nil
}

// PodMetrics GETs the pod's metrics as fabric8's top().pods().metrics(ns,
// name) does (PodMetricOperationsImpl, v7.6.1).
func (c *client) PodMetrics(ctx context.Context, ns, name string) ([]byte, error) {
	return c.core.Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods", name).
		SetHeader("Accept", "application/json").Do(ctx).Raw()
}

func (c *client) TokenReviews() Creator[*authenticationv1.TokenReview] {
	return gentype.NewClient("tokenreviews", c.authn, c.params, "", func() *authenticationv1.TokenReview { return new(authenticationv1.TokenReview) },
		gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

func (c *client) SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview] {
	return gentype.NewClient("subjectaccessreviews", c.authz, c.params, "",
		func() *authorizationv1.SubjectAccessReview { return new(authorizationv1.SubjectAccessReview) },
		gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

func (c *client) GRPCRoutes(ns string) dynamic.ResourceInterface {
	return c.dynamic.Resource(GRPCRouteResource).Namespace(ns)
}

// ServerVersion GETs /version, as client-go's discovery client does.
func (c *client) ServerVersion(ctx context.Context) (*version.Info, error) {
	body, err := c.core.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("decode /version: %w", err)
	}
	return &info, nil
}
