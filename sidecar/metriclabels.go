package sidecar

// The label values of the JVM request counter come from a fixed set, so
// that a request path or method (which the JVM, or anything that reaches
// 127.0.0.1 with the token, chooses) can neither grow the metric without
// bound nor, with text that is not UTF-8, make the client library panic.
var (
	metricVerbs = map[string]bool{"get": true, "list": true, "watch": true, "create": true, "update": true,
		"patch": true, "delete": true, "deletecollection": true}
	metricResources = map[string]bool{"": true, "pods": true, "configmaps": true, "persistentvolumeclaims": true,
		"services": true, "version": true, "discovery": true, "other": true}
)

// metricLabel returns v when known holds it, else "other".
func metricLabel(known map[string]bool, v string) string {
	if known[v] {
		return v
	}
	return "other"
}
