package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// ConnectRoute is the Gateway API GRPCRoute "<server>-connect" that
// routes the policy's Gateways to svc's Connect port, owned by driver
// as svc is (gateway.networking.k8s.io/v1 GRPCRoute, gateway-api
// v1.1.0+: parentRefs, hostnames, rules[].backendRefs).
func ConnectRoute(driver *corev1.Pod, svc *corev1.Service, r *policy.GRPCRoute) (*unstructured.Unstructured, error) {
	server := driver.Labels[vocab.LabelConnectServer]
	hostnames := r.RouteHostnames(server, driver.Namespace)
	for i, h := range hostnames {
		if err := policy.CheckRouteHostname(h); err != nil {
			return nil, fmt.Errorf("the policy's connect.grpcRoute.hostnames[%d] %q gives %q for server %s, not a DNS name (%v); shorten the template or the server's name", i, r.Hostnames[i], h, server, err)
		}
	}
	parents := make([]any, len(r.ParentRefs))
	for i, p := range r.ParentRefs {
		ref := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": p.Name}
		if p.Namespace != "" {
			ref["namespace"] = p.Namespace
		}
		if p.SectionName != "" {
			ref["sectionName"] = p.SectionName
		}
		parents[i] = ref
	}
	spec := map[string]any{
		"parentRefs": parents,
		"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": svc.Name, "port": int64(patches.ConnectPort)}}}},
	}
	if len(hostnames) > 0 {
		hs := make([]any, len(hostnames))
		for i, h := range hostnames {
			hs[i] = h
		}
		spec["hostnames"] = hs
	}
	route := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	route.SetAPIVersion(kubecore.GRPCRouteResource.GroupVersion().String())
	route.SetKind("GRPCRoute")
	route.SetName(svc.Name)
	route.SetNamespace(svc.Namespace)
	route.SetLabels(svc.Labels)
	route.SetOwnerReferences([]metav1.OwnerReference{podOwner(driver)})
	return route, nil
}

// exposeRoute creates the Connect server's GRPCRoute when the policy asks
// for one, or adds driver to the owners of the one another pod of the
// server made, records the address of its first hostname in the pod's
// sparklet.io/connect-route-url and says so in an Event. A cluster
// without the Gateway API's CRDs, as any failure, gets a Warning Event,
// never the driver's failure.
func exposeRoute(ctx context.Context, client kubecore.Interface, driver *corev1.Pod, svc *corev1.Service, pol *policy.Effective, events *recorder) {
	r := pol.Connect.GRPCRoute
	if r == nil {
		return
	}
	route, err := ConnectRoute(driver, svc, r)
	if err != nil {
		events.warning("SparkConnectRouteFailed", "no GRPCRoute for Spark Connect clients: "+err.Error())
		return
	}
	routes := client.GRPCRoutes(route.GetNamespace())
	made, err := routes.Create(ctx, route, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		made, err = joinOwners(ctx, client, route.GetNamespace(), route.GetName(), podOwner(driver))
	}
	if apierrors.IsNotFound(err) {
		events.warning("SparkConnectRouteFailed", fmt.Sprintf("no GRPCRoute %s for Spark Connect clients: the Gateway API CRDs are missing (the API server serves no %s); install the Gateway API's standard CRDs (v1.1.0 or later) and a Gateway controller, or remove connect.grpcRoute from the policy",
			route.GetName(), kubecore.GRPCRouteResource.GroupResource()))
		return
	}
	if err != nil {
		events.warning("SparkConnectRouteFailed", fmt.Sprintf("create GRPCRoute %s for Spark Connect clients: %v", route.GetName(), err))
		return
	}
	gateways := make([]string, len(r.ParentRefs))
	for i, p := range r.ParentRefs {
		gateways[i] = p.Name
		if p.Namespace != "" {
			gateways[i] = p.Namespace + "/" + p.Name
		}
	}
	msg := fmt.Sprintf("GRPCRoute %s routes Gateway %s to Service %s port %d", route.GetName(), strings.Join(gateways, ", "), svc.Name, patches.ConnectPort)
	if url := routeURL(made); url != "" {
		if err := annotatePod(ctx, client, driver.Namespace, driver.Name, vocab.AnnotationConnectRouteURL, url); err != nil {
			events.warning("SparkConnectRouteFailed", fmt.Sprintf("annotate the driver with the Spark Connect address %s: %v", url, err))
			return
		}
		msg += fmt.Sprintf("; once the Gateway accepts it, clients connect to %s/;use_ssl=true;token=$TOKEN", url)
	}
	events.normal("SparkConnectRoute", msg)
}

// joinOwners adds owner to the GRPCRoute's owners. A custom resource
// takes no strategic merge patch, and a merge patch replaces the whole
// list: the patch carries the resourceVersion it read, so the API server
// refuses it if another pod joined meanwhile, and it is read again.
func joinOwners(ctx context.Context, client kubecore.Interface, namespace, name string, owner metav1.OwnerReference) (*unstructured.Unstructured, error) {
	routes := client.GRPCRoutes(namespace)
	var route *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := routes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		owners := got.GetOwnerReferences()
		if slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == owner.UID }) {
			route = got
			return nil
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": got.GetResourceVersion(), "ownerReferences": append(owners, owner)}})
		route, err = routes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
		return err
	})
	return route, err
}

// routeURL is the address of route's first hostname through a Gateway's
// HTTPS listener, or "" when it has none or a wildcard.
func routeURL(route *unstructured.Unstructured) string {
	hostnames, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	if len(hostnames) == 0 || strings.HasPrefix(hostnames[0], "*") {
		return ""
	}
	return "sc://" + hostnames[0] + ":443"
}
