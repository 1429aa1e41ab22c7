package sidecar

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

func routePolicy() *policy.Effective {
	yes := true
	return &policy.Effective{Connect: policy.Connect{Service: &yes, GRPCRoute: &policy.GRPCRoute{
		ParentRefs: []policy.GatewayRef{{Name: "spark-gateway", Namespace: "gateways", SectionName: "https"}},
		Hostnames:  []string{"{{SERVER}}.{{NAMESPACE}}.connect.example.com"},
	}}}
}

// exposeBoth runs each pod's exposeConnect on client and returns the
// Events they recorded.
func exposeBoth(t *testing.T, client *kubecoretest.Clientset, pol *policy.Effective, pods ...*corev1.Pod) []corev1.Event {
	t.Helper()
	for _, pod := range pods {
		events := newRecorder(client, pod, logrus.NewEntry(logrus.New()))
		exposeConnect(context.Background(), client, pod, pol, true, events)
		events.flush(10 * time.Second)
	}
	evs, err := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// TestExposeRoute: the first pod's sidecar creates the GRPCRoute from the
// policy's Gateway to the Service's Connect port, the second joins its
// owners, and each pod gets the address through the Gateway and an
// Event.
func TestExposeRoute(t *testing.T) {
	first, second := connectServerPod("spark-connect-a", "uid-a", nil), connectServerPod("spark-connect-b", "uid-b", nil)
	client := kubecoretest.New(fake.NewClientset(first, second))
	evs := exposeBoth(t, client, routePolicy(), first, second)

	route, err := client.GRPCRoutes("ns").Get(context.Background(), "spark-connect-connect", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the route: %v", err)
	}
	if route.GetKind() != "GRPCRoute" || route.GetAPIVersion() != "gateway.networking.k8s.io/v1" {
		t.Errorf("kind %s %s", route.GetAPIVersion(), route.GetKind())
	}
	parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	if len(parents) != 1 || parents[0].(map[string]any)["name"] != "spark-gateway" || parents[0].(map[string]any)["namespace"] != "gateways" || parents[0].(map[string]any)["sectionName"] != "https" {
		t.Errorf("parentRefs %v, want gateways/spark-gateway's https listener", parents)
	}
	hostnames, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	if !slices.Equal(hostnames, []string{"spark-connect.ns.connect.example.com"}) {
		t.Errorf("hostnames %v", hostnames)
	}
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("rules %v, want one", rules)
	}
	backends := rules[0].(map[string]any)["backendRefs"].([]any)
	if b := backends[0].(map[string]any); len(backends) != 1 || b["name"] != "spark-connect-connect" || b["port"] != int64(15002) {
		t.Errorf("backendRefs %v, want the Service on 15002", backends)
	}
	var owners []string
	for _, o := range route.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			t.Errorf("owner %s is the controller; no pod may be", o.Name)
		}
		owners = append(owners, string(o.UID))
	}
	if slices.Sort(owners); strings.Join(owners, ",") != "uid-a,uid-b" {
		t.Errorf("owners %v, want both pods", owners)
	}
	for _, name := range []string{first.Name, second.Name} {
		pod, _ := client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if got := pod.Annotations[vocab.AnnotationConnectRouteURL]; got != "sc://spark-connect.ns.connect.example.com:443" {
			t.Errorf("pod %s: %s = %q", name, vocab.AnnotationConnectRouteURL, got)
		}
	}
	var routeEvents int
	for _, e := range evs {
		if e.Reason == "SparkConnectRoute" && strings.Contains(e.Message, "gateways/spark-gateway") {
			routeEvents++
		}
	}
	if routeEvents != 2 {
		t.Errorf("events %v, want a SparkConnectRoute Event on each pod", evs)
	}

	// A pod joining again, as after a container restart, adds no owner.
	exposeBoth(t, client, routePolicy(), first)
	again, _ := client.GRPCRoutes("ns").Get(context.Background(), "spark-connect-connect", metav1.GetOptions{})
	if n := len(again.GetOwnerReferences()); n != 2 {
		t.Errorf("after a pod's second join, %d owners, want 2", n)
	}
}

// A cluster without the Gateway API's CRDs answers NotFound: the
// Service is still made, the route is a Warning Event saying the CRDs
// are missing.
func TestExposeRouteWithoutCRD(t *testing.T) {
	pod := connectServerPod("spark-connect-a", "uid-a", nil)
	client := kubecoretest.New(fake.NewClientset(pod))
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("create", "grpcroutes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(kubecore.GRPCRouteResource.GroupResource(), "")
	})
	client.Dynamic = dyn
	evs := exposeBoth(t, client, routePolicy(), pod)
	if _, err := client.CoreV1().Services("ns").Get(context.Background(), "spark-connect-connect", metav1.GetOptions{}); err != nil {
		t.Errorf("the Service: %v", err)
	}
	var warned bool
	for _, e := range evs {
		if e.Reason == "SparkConnectRouteFailed" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "the Gateway API CRDs are missing") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("events %v, want a SparkConnectRouteFailed Warning saying the Gateway API CRDs are missing", evs)
	}
}

// A server whose name makes a hostname too long gets a Warning Event
// naming the template, and no route.
func TestExposeRouteBadHostname(t *testing.T) {
	pod := connectServerPod("spark-connect-a", "uid-a", nil)
	pod.Labels[vocab.LabelConnectServer] = strings.Repeat("s", 63)
	client := kubecoretest.New(fake.NewClientset(pod))
	pol := routePolicy()
	pol.Connect.GRPCRoute.Hostnames = []string{"{{SERVER}}{{SERVER}}.example.com"}
	evs := exposeBoth(t, client, pol, pod)
	list, _ := client.GRPCRoutes("ns").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("routes %v, want none", list.Items)
	}
	if i := slices.IndexFunc(evs, func(e corev1.Event) bool {
		return e.Reason == "SparkConnectRouteFailed" && strings.Contains(e.Message, "connect.grpcRoute.hostnames[0]")
	}); i < 0 {
		t.Errorf("events %v, want a SparkConnectRouteFailed naming the hostname's template", evs)
	}
}

// A pod joining while another does gets a Conflict for its stale
// resourceVersion, reads the route again and joins it then.
func TestExposeRouteJoinConflict(t *testing.T) {
	first, second := connectServerPod("spark-connect-a", "uid-a", nil), connectServerPod("spark-connect-b", "uid-b", nil)
	client := kubecoretest.New(fake.NewClientset(first, second))
	exposeBoth(t, client, routePolicy(), first)
	var patches, conflicts int
	client.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "grpcroutes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if patches++; patches == 1 {
			conflicts++
			return true, nil, apierrors.NewConflict(kubecore.GRPCRouteResource.GroupResource(), "spark-connect-connect", nil)
		}
		return false, nil, nil
	})
	evs := exposeBoth(t, client, routePolicy(), second)
	route, _ := client.GRPCRoutes("ns").Get(context.Background(), "spark-connect-connect", metav1.GetOptions{})
	if conflicts != 1 || patches != 2 || len(route.GetOwnerReferences()) != 2 {
		t.Errorf("%d conflicts, %d patches, owners %v; want the patch retried once and both pods owners", conflicts, patches, route.GetOwnerReferences())
	}
	if slices.ContainsFunc(evs, func(e corev1.Event) bool { return e.Reason == "SparkConnectRouteFailed" }) {
		t.Errorf("events %v, want no failure", evs)
	}
}
