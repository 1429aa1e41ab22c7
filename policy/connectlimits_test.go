package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestConnectLimits: a namespace narrows the cluster's limit and timeout
// and layers its Spark defaults; bad values are refused naming the field.
func TestConnectLimits(t *testing.T) {
	p, err := Parse([]byte(`
connect:
  maxSessions: 10
  sessionIdleTimeout: 30m
  tlsSecretName: connect-tls
  spark:
    defaults: {spark.dynamicAllocation.enabled: "true", spark.dynamicAllocation.minExecutors: "0"}
    enforced: {spark.dynamicAllocation.shuffleTracking.enabled: "true"}
namespaces:
  small:
    connect:
      maxSessions: 2
      sessionIdleTimeout: 2h
      spark:
        defaults: {spark.dynamicAllocation.minExecutors: "1"}
        enforced: {spark.dynamicAllocation.shuffleTracking.enabled: "false"}
  loose:
    connect: {maxSessions: 50, sessionIdleTimeout: 5m, tlsSecretName: loose-connect-tls}
`), "dev")
	if err != nil {
		t.Fatal(err)
	}
	small := p.For("small").Connect
	if small.MaxSessions != 2 || small.IdleTimeout() != 30*time.Minute || small.SparkSessionTimeout() != "1800000ms" {
		t.Errorf("small: %d sessions, %v (%s), want 2 and the cluster's 30m", small.MaxSessions, small.IdleTimeout(), small.SparkSessionTimeout())
	}
	if want := (SparkConf{
		Defaults: map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.minExecutors": "1"},
		Enforced: map[string]string{"spark.dynamicAllocation.shuffleTracking.enabled": "true"},
	}); !reflect.DeepEqual(small.Spark, want) {
		t.Errorf("small's Spark %+v, want %+v", small.Spark, want)
	}
	if loose := p.For("loose").Connect; loose.MaxSessions != 10 || loose.IdleTimeout() != 5*time.Minute {
		t.Errorf("loose: %d sessions, %v, want the cluster's 10 and its own 5m", loose.MaxSessions, loose.IdleTimeout())
	}
	if small.TLSSecretName != "connect-tls" || p.For("loose").Connect.TLSSecretName != "loose-connect-tls" {
		t.Errorf("TLS Secrets: small %q, loose %q, want the cluster's connect-tls and loose's own", small.TLSSecretName, p.For("loose").Connect.TLSSecretName)
	}
	if other := p.For("other").Connect; other.MaxSessions != 10 || other.SessionIdleTimeout != "30m" || other.TLSSecretName != "connect-tls" {
		t.Errorf("another namespace: %+v, want the cluster's", other)
	}
	if (Connect{}).SparkSessionTimeout() != "" {
		t.Error("no timeout renders a Spark value")
	}
	for doc, want := range map[string]string{
		"connect: {maxSessions: -1}":                                    "connect.maxSessions: -1: give the most sessions",
		"connect: {sessionIdleTimeout: '30'}":                           `connect.sessionIdleTimeout: "30" is not a duration of a second or more, such as 30m`,
		"namespaces: {a: {connect: {sessionIdleTimeout: 10ms}}}":        `namespaces.a.connect.sessionIdleTimeout: "10ms"`,
		"connect: {spark: {defaults: {dynamicAllocation: 'true'}}}":     `connect.spark.defaults.dynamicAllocation: Spark properties start with "spark."`,
		"connect: {spark: {enforced: {spark.master: x}}}":               "connect.spark.enforced.spark.master: reserved",
		"connect: {spark: {defaults: {" + KeySessionTimeout + ": 1h}}}": "connect.spark.defaults." + KeySessionTimeout + ": set it with connect.sessionIdleTimeout",
		"namespaces: {a: {connect: {tlsSecretName: Connect_TLS}}}":      `namespaces.a.connect.tlsSecretName: "Connect_TLS": a lowercase RFC 1123 subdomain`,
	} {
		if _, err := Parse([]byte(doc), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", doc, err, want)
		}
	}
}
