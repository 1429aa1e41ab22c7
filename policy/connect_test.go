package policy

import (
	"strings"
	"testing"
)

// TestConnectAccess: the defaults, a policy's own permission, and bad ones
// refused naming the field.
func TestConnectAccess(t *testing.T) {
	if got, want := (Sidecar{}).ConnectAccessOrDefault(), (ConnectAccess{"create", "sparklet.io", "sparkconnect"}); got != want {
		t.Errorf("default %+v, want %+v", got, want)
	}
	p, err := Parse([]byte("sidecar: {connectAccess: {verb: use, resource: services}}"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.For("x").Sidecar.ConnectAccessOrDefault(), (ConnectAccess{"use", "", "services"}); got != want {
		t.Errorf("a core resource %+v, want %+v", got, want)
	}
	for doc, want := range map[string]string{
		"sidecar: {connectAccess: {verb: Create}}":             `sidecar.connectAccess.verb: "Create" is not a Kubernetes verb`,
		"sidecar: {connectAccess: {group: example.com}}":       `sidecar.connectAccess.resource: required with group "example.com"`,
		"sidecar: {connectAccess: {resource: Spark_Conn}}":     `sidecar.connectAccess.resource: "Spark_Conn"`,
		"sidecar: {connectAccess: {group: '-x', resource: a}}": `sidecar.connectAccess.group: "-x"`,
	} {
		if _, err := Parse([]byte(doc), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", doc, err, want)
		}
	}
}
