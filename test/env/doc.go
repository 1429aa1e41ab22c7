// Package env runs sparklet and the local control plane for tests and demos.
//
// It starts the cluster (and, on request, the pod runner as a node), runs
// `sparklet webhook` as a process with a certificate from the cluster's CA,
// and registers it exactly as the Helm chart does. The
// end-to-end tests and `make demo` both use it.
package env
