package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestGRPCRoute: a namespace's grpcRoute replaces the cluster's, the
// hostnames' placeholders are filled in, and bad routes are refused
// naming the field and the fix.
func TestGRPCRoute(t *testing.T) {
	p, err := Parse([]byte(`
connect:
  service: true
  grpcRoute:
    parentRefs: [{name: spark-gateway, namespace: gateways, sectionName: https}]
    hostnames: ["{{SERVER}}.{{NAMESPACE}}.connect.example.com"]
namespaces:
  own:
    connect:
      grpcRoute: {parentRefs: [{name: own-gateway}]}
`), "dev")
	if err != nil {
		t.Fatal(err)
	}
	r := p.For("other").Connect.GRPCRoute
	if r == nil || !reflect.DeepEqual(r.ParentRefs, []GatewayRef{{"spark-gateway", "gateways", "https"}}) {
		t.Fatalf("other's route %+v, want the cluster's", r)
	}
	if got := r.RouteHostnames("nb", "team-a"); !reflect.DeepEqual(got, []string{"nb.team-a.connect.example.com"}) {
		t.Errorf("hostnames %v", got)
	}
	own := p.For("own").Connect
	if own.GRPCRoute == nil || own.GRPCRoute.ParentRefs[0].Name != "own-gateway" || len(own.GRPCRoute.Hostnames) != 0 {
		t.Errorf("own's route %+v, want its own Gateway and no hostnames", own.GRPCRoute)
	}
	if own.Service == nil || !*own.Service {
		t.Errorf("own's service %v, want the cluster's true", own.Service)
	}

	for policy, want := range map[string]string{
		"connect: {grpcRoute: {}}":                                                                                   "connect.grpcRoute.parentRefs: is required: name the Gateway",
		"connect: {grpcRoute: {parentRefs: [{namespace: gw}]}}":                                                      "connect.grpcRoute.parentRefs[0].name: is required",
		"connect: {grpcRoute: {parentRefs: [{name: Gate_Way}]}}":                                                     `connect.grpcRoute.parentRefs[0].name: "Gate_Way"`,
		"connect: {grpcRoute: {parentRefs: [{name: gw, namespace: a.b}]}}":                                           `connect.grpcRoute.parentRefs[0].namespace: "a.b"`,
		"connect: {grpcRoute: {parentRefs: [{name: gw, sectionName: HTTPS}]}}":                                       `connect.grpcRoute.parentRefs[0].sectionName: "HTTPS"`,
		"connect: {grpcRoute: {parentRefs: [{name: gw}], hostnames: ['{{SERVER}}_x.example.com']}}":                  `connect.grpcRoute.hostnames[0]: "{{SERVER}}_x.example.com" does not give a DNS name`,
		"namespaces: {a: {connect: {grpcRoute: {parentRefs: [{name: gw}], hostnames: ['{{server}}.example.com']}}}}": `namespaces.a.connect.grpcRoute.hostnames[0]: "{{server}}.example.com" does not give a DNS name`,
		"connect: {service: false, grpcRoute: {parentRefs: [{name: gw}]}}":                                           "connect.grpcRoute: routes to the Service that connect.service: false turns off; set service: true or remove grpcRoute",
		"connect: {grpcRoute: {parentRefs: [{name: gw}], hostname: x}}":                                              "hostname",
	} {
		_, err := Parse([]byte(policy), "dev")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", policy, err, want)
		}
	}
	for _, ok := range []string{
		"connect: {grpcRoute: {parentRefs: [{name: gw}], hostnames: ['*.connect.example.com', '{{SERVER}}.example.com']}}",
	} {
		if _, err := Parse([]byte(ok), "dev"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
