package policy

import (
	"strconv"
	"time"
)

// Connect is the policy for Spark Connect servers (docs/connect.md): how
// many sessions one server holds, how long an idle session lives, and
// Spark configuration of their own, layered on the spark section.
type Connect struct {
	// MaxSessions caps the sessions one server holds at once; the sidecar
	// refuses a call that would open one more. 0: no limit.
	MaxSessions int `json:"maxSessions,omitempty"`
	// SessionIdleTimeout, a duration such as 30m, closes a session with no
	// call for that long: the webhook sets it as Spark's
	// spark.connect.session.manager.defaultSessionTimeout and the sidecar
	// stops counting the session.
	SessionIdleTimeout string `json:"sessionIdleTimeout,omitempty"`
	// Spark holds defaults, which win over the spark section's and yield to
	// the pod's own, and enforced values, for Connect servers only.
	Spark SparkConf `json:"spark,omitempty"`
	// Service has the sidecar of every Connect server create a Service in
	// front of the server's pods (the namespace's if set); a pod's
	// sparklet.io/connect-service annotation overrides it.
	Service *bool `json:"service,omitempty"`
	// TLSSecretName names a kubernetes.io/tls Secret in the server's
	// namespace: the sidecar then serves the Connect port over TLS only,
	// with its tls.crt and tls.key (docs/connect.md#tls).
	TLSSecretName string `json:"tlsSecretName,omitempty"`
	// GRPCRoute has the sidecar route a Gateway to the Service too
	// (policy/connectroute.go).
	GRPCRoute *GRPCRoute `json:"grpcRoute,omitempty"`
}

// KeySessionTimeout is Spark's idle session timeout: a session with no
// call for that long is closed by the server's periodic maintenance
// (Connect.scala and SparkConnectSessionManager.periodicMaintenance,
// 3.5.0 to 4.3.0; default 60m, -1 never).
const KeySessionTimeout = "spark.connect.session.manager.defaultSessionTimeout"

// IdleTimeout is SessionIdleTimeout, 0 when unset.
func (c Connect) IdleTimeout() time.Duration {
	d, _ := time.ParseDuration(c.SessionIdleTimeout)
	return d
}

// SparkSessionTimeout is IdleTimeout as Spark's time configuration reads
// it, in milliseconds, or "" when unset.
func (c Connect) SparkSessionTimeout() string {
	d := c.IdleTimeout()
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// stricterConnect is the cluster's connect section narrowed by a
// namespace's: the smaller limit and timeout where both set one, the
// namespace's Spark defaults over the cluster's, the cluster's enforced
// values over the namespace's, the namespace's TLS Secret over the
// cluster's (a namespace may name its own Secret but not turn TLS off),
// the namespace's service and grpcRoute over the cluster's where set.
func stricterConnect(cluster Connect, ns *Connect) Connect {
	if ns == nil {
		return cluster
	}
	out := Connect{
		MaxSessions:        cluster.MaxSessions,
		SessionIdleTimeout: cluster.SessionIdleTimeout,
		TLSSecretName:      cluster.TLSSecretName,
		Spark: SparkConf{
			Defaults: mergeMap(cluster.Spark.Defaults, ns.Spark.Defaults),
			Enforced: mergeMap(ns.Spark.Enforced, cluster.Spark.Enforced),
		},
		Service:   cluster.Service,
		GRPCRoute: cluster.GRPCRoute,
	}
	if ns.Service != nil {
		out.Service = ns.Service
	}
	if ns.GRPCRoute != nil {
		out.GRPCRoute = ns.GRPCRoute
	}
	if ns.MaxSessions > 0 && (out.MaxSessions == 0 || ns.MaxSessions < out.MaxSessions) {
		out.MaxSessions = ns.MaxSessions
	}
	if d := ns.IdleTimeout(); d > 0 && (out.IdleTimeout() == 0 || d < out.IdleTimeout()) {
		out.SessionIdleTimeout = ns.SessionIdleTimeout
	}
	if ns.TLSSecretName != "" {
		out.TLSSecretName = ns.TLSSecretName
	}
	return out
}

func (v *validator) connect(at string, c *Connect) {
	if c == nil {
		return
	}
	if c.MaxSessions < 0 {
		v.add(at+".maxSessions", "%d: give the most sessions one server may hold, or 0 for no limit", c.MaxSessions)
	}
	if c.SessionIdleTimeout != "" {
		if d, err := time.ParseDuration(c.SessionIdleTimeout); err != nil || d < time.Second {
			v.add(at+".sessionIdleTimeout", "%q is not a duration of a second or more, such as 30m", c.SessionIdleTimeout)
		}
	}
	if c.TLSSecretName != "" {
		v.dnsSubdomain(at+".tlsSecretName", c.TLSSecretName)
	}
	v.grpcRoute(at+".grpcRoute", c.GRPCRoute, c.Service)
	v.spark(at+".spark", c.Spark)
	for section, conf := range map[string]map[string]string{"defaults": c.Spark.Defaults, "enforced": c.Spark.Enforced} {
		if _, ok := conf[KeySessionTimeout]; ok {
			v.add(at+".spark."+section+"."+KeySessionTimeout, "set it with %s.sessionIdleTimeout, which the sidecar follows too", at)
		}
	}
}
