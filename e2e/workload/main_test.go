// Package workload checks, with the real kube-scheduler, what Kubernetes'
// own gang scheduling (the Workload API, KEP-4671) does with a Spark
// driver: docs/scheduling.md says why sparklet does not use it, and this
// package shows it on the local control plane.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then fails, rather
// than skips, if the binaries are missing.
package workload

import (
	"os"
	"path/filepath"
	"testing"

	testenv "github.com/sparklet/sparklet/test/env"
)

var env *testenv.Env

// The Workload API is beta in 1.37 behind GenericWorkload, off by
// default, and its API version is not served by default
// (pkg/controlplane/instance.go, v1.37.2).
const gate = "--feature-gates=GenericWorkload=true"

func TestMain(m *testing.M) {
	policy, _ := filepath.Abs("../../examples/policy.yaml")
	os.Exit(testenv.Main(m, "workload", testenv.Options{PolicyFile: policy,
		APIServerFlags: []string{gate, "--runtime-config=scheduling.k8s.io/v1beta1=true"},
		SchedulerFlags: []string{gate}}, func(e *testenv.Env) error { env = e; return nil }))
}
