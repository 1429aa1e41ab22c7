package patches

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
)

// planConnectPolicy layers the policy's connect section on a Spark Connect
// server's configuration (docs/connect.md): its Spark defaults over the
// spark section's and under the pod's own, its enforced values over
// everything, and its sessionIdleTimeout as Spark's own session timeout,
// which the pod may then not change. It runs after planConnect, and before
// planConnectAuth, which refuses the keys sparklet owns whoever sets them.
func planConnectPolicy(pod *corev1.Pod, p *plan) error {
	if p.connect == "" {
		return nil
	}
	c := p.pol.Connect
	enforced := maps.Clone(c.Spark.Enforced)
	if t := c.SparkSessionTimeout(); t != "" {
		if enforced == nil {
			enforced = map[string]string{}
		}
		enforced[policy.KeySessionTimeout] = t
	}
	for _, src := range p.podConf {
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			want, ok := enforced[k]
			if !ok || src.conf[k] == want {
				continue
			}
			field := "connect.spark.enforced"
			if k == policy.KeySessionTimeout {
				field = "connect.sessionIdleTimeout (" + c.SessionIdleTimeout + ")"
			}
			return &Refused{Reason: "enforced-key", Message: fmt.Sprintf(
				"%s sets %s=%s, but for a Spark Connect server the sparklet policy's %s enforces %s=%s in namespace %s; remove it or use the enforced value",
				src.setter(k), k, src.conf[k], field, k, want, p.in.Namespace)}
		}
	}
	for k, v := range c.Spark.Defaults {
		if _, ok := p.pol.Spark.Enforced[k]; ok || p.setByPod(k) {
			continue
		}
		p.conf[k] = v
	}
	maps.Copy(p.conf, enforced)
	if c.SessionIdleTimeout != "" && !lineOfImage(p.container(pod).Image).atLeast(connectAuthSince) {
		p.warn(fmt.Sprintf("the policy's connect.sessionIdleTimeout (%s) is Spark's own session timeout from Spark 4.0; a Spark %s server keeps a session "+
			"60 minutes after its last call whatever it says, and the sidecar counts it for the timeout (docs/connect.md#spark-35)",
			c.SessionIdleTimeout, imageVersion(p.container(pod).Image)))
	}
	return nil
}

// setByPod tells whether the pod sets a Spark property itself.
func (p *plan) setByPod(k string) bool {
	for _, src := range p.podConf {
		if _, ok := src.conf[k]; ok {
			return true
		}
	}
	return false
}
