// Command podrunner plays the kubelet for one node of a running control plane.
// The pods bound to the node run as local processes (see
// docs/pod-runner.md). It runs as root until interrupted.
//
//	go run ./hack/podrunner --kubeconfig .cache/cluster/kubeconfig --host-images local/shell
//
// Pods reach the API server through the runner's bridge address, which
// the API server's certificate must name (cluster.Options.ExtraSANs).
package main
