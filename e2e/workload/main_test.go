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
