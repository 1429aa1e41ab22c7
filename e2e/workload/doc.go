// Package workload checks, with the real kube-scheduler, what Kubernetes'
// own gang scheduling (the Workload API, KEP-4671) does with a Spark
// driver: docs/scheduling.md says why sparklet does not use it, and this
// package shows it on the local control plane.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then fails, rather
// than skips, if the binaries are missing.
package workload
