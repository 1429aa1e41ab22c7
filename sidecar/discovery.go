package sidecar

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/sparklet/sparklet/internal/kubecore"
)

var podsGR = schema.GroupResource{Resource: "pods"}

// served are the resources the sidecar serves and the verbs it allows on
// each: what discovery advertises and what the pass-through enforces.
var served = []metav1.APIResource{
	{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod",
		Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "watch"}, ShortNames: []string{"po"}},
	{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap",
		Verbs: metav1.Verbs{"create", "deletecollection"}, ShortNames: []string{"cm"}},
	{Name: "persistentvolumeclaims", SingularName: "persistentvolumeclaim", Namespaced: true, Kind: "PersistentVolumeClaim",
		Verbs: metav1.Verbs{"create", "get", "list", "patch", "deletecollection"}, ShortNames: []string{"pvc"}},
	{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service",
		Verbs: metav1.Verbs{"deletecollection"}, ShortNames: []string{"svc"}},
}

// verbsOf returns the verbs the sidecar allows on a resource.
func verbsOf(resource string) metav1.Verbs {
	for _, r := range served {
		if r.Name == resource {
			return r.Verbs
		}
	}
	return nil
}

// serveDiscovery answers the discovery paths and reports whether the
// request was one, with the resource to count it under.
func (a *API) serveDiscovery(w http.ResponseWriter, req *request) (string, bool) {
	switch req.URL.Path {
	case "/version":
		writeObject(w, http.StatusOK, a.server)
		return "version", true
	case "/api":
		writeObject(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: req.Host}}})
		return "discovery", true
	case "/apis":
		writeObject(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}})
		return "discovery", true
	case "/api/v1":
		writeObject(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1",
			APIResources: served,
		})
		return "discovery", true
	}
	return "", false
}

// serverVersion is the API server's version, which the sidecar reports as
// its own.
func serverVersion(ctx context.Context, client kubecore.Interface) *version.Info {
	if v, err := client.ServerVersion(ctx); err == nil && v != nil {
		return v
	}
	return &version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.0"}
}
