package e2e

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/sidecar"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/vocab"
)

// TestGRPCRouteAgainstTheCRD: the API server, serving the Gateway API's
// standard GRPCRoute CRD (make gateway-api-crds, pinned), accepts the
// route a Connect server's sidecar builds from the policy's
// connect.grpcRoute in a strict server-side dry run (a field the schema
// does not know is an error), keeping every field, and refuses a route
// its schema does not allow.
func TestGRPCRouteAgainstTheCRD(t *testing.T) {
	t.Parallel()
	crd := filepath.Join(e2egate.BinDir(t, "with gateway-api-crds in it (make gateway-api-crds)"), "gateway-api-crds", "gateway.networking.k8s.io_grpcroutes.yaml")
	ctx := ctxFor(t)
	for _, args := range [][]string{
		{"apply", "--server-side", "-f", crd},
		{"wait", "--for", "condition=established", "--timeout", "60s", "crd/grpcroutes.gateway.networking.k8s.io"},
	} {
		if _, stderr, err := env.Kubectl(ctx, nil, args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	ns := namespace(t, false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "spark-connect-0", Namespace: ns, UID: "00000000-0000-0000-0000-000000000001",
		Labels: map[string]string{vocab.LabelRole: "driver", vocab.LabelConnectServer: "spark-connect"}}}
	svc, err := sidecar.ConnectService(pod, true)
	if err != nil {
		t.Fatal(err)
	}
	rules := &policy.GRPCRoute{
		ParentRefs: []policy.GatewayRef{{Name: "spark-gateway", Namespace: "gateways", SectionName: "https"}, {Name: "internal"}},
		Hostnames:  []string{"{{SERVER}}.{{NAMESPACE}}.connect.example.com"},
	}
	route, err := sidecar.ConnectRoute(pod, svc, rules)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubecore.New(env.Cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a field the schema does not know is an error, not pruned
	// with a warning.
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	got, err := client.GRPCRoutes(ns).Create(ctx, route, dryRun)
	if err != nil {
		t.Fatalf("the API server refuses the sidecar's GRPCRoute: %v", err)
	}
	for _, field := range [][]string{{"spec", "parentRefs"}, {"spec", "hostnames"}, {"metadata", "ownerReferences"}, {"metadata", "labels"}} {
		sent, _, _ := unstructured.NestedFieldNoCopy(route.Object, field...)
		kept, _, _ := unstructured.NestedFieldNoCopy(got.Object, field...)
		if !reflect.DeepEqual(sent, kept) {
			t.Errorf("%s: sent %v, the API server kept %v", strings.Join(field, "."), sent, kept)
		}
	}
	gotRules, _, _ := unstructured.NestedSlice(got.Object, "spec", "rules")
	if len(gotRules) != 1 {
		t.Fatalf("rules %v, want one", gotRules)
	}
	backends, _ := gotRules[0].(map[string]any)["backendRefs"].([]any)
	if len(backends) != 1 || backends[0].(map[string]any)["name"] != svc.Name || backends[0].(map[string]any)["port"] != int64(15002) {
		t.Errorf("backendRefs %v, want Service %s on 15002", backends, svc.Name)
	}

	// The schema is enforced: a hostname it does not allow is refused.
	bad := route.DeepCopy()
	_ = unstructured.SetNestedStringSlice(bad.Object, []string{"Spark_Connect.example.com"}, "spec", "hostnames")
	if _, err := client.GRPCRoutes(ns).Create(ctx, bad, dryRun); !apierrors.IsInvalid(err) {
		t.Errorf("a route with hostname Spark_Connect.example.com: %v, want Invalid", err)
	}
}
