// Command demo is `make demo`: real SparkPi through sparklet, shown step by step.
//
// It starts the local control plane and a real node (kubelet, containerd,
// kube-proxy, CoreDNS), installs sparklet's chart with helm as
// docs/install.md tells, runs the example driver pod and Job on the stock
// Spark image, and shows what sparklet did to them. With --pod-runner the
// pods run on the pod runner instead, the webhook as a local process
// registered as the chart would (make demo-pod-runner). With --emulator it
// runs kwok's fake nodes and the driver emulator, without JVMs or root.
package main
