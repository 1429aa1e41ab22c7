package policy

import "fmt"

// Listen is the address of the JVM's API: loopback only.
func (s Sidecar) Listen() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// MetricsListen is the address of /metrics and the probes: every interface,
// for the kubelet and Prometheus.
func (s Sidecar) MetricsListen() string { return fmt.Sprintf(":%d", s.MetricsPort) }
