// Package e2e tests sparklet through the local control plane's admission chain.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then
// fails, rather than skips, if the binaries are missing.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	testenv "github.com/sparklet/sparklet/test/env"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	policy, _ := filepath.Abs("../examples/policy.yaml")
	os.Exit(testenv.Main(m, "e2e", testenv.Options{PolicyFile: policy,
		APIServerFlags: []string{"--feature-gates=" + futureFieldGate + "=true"}}, func(e *testenv.Env) error { env = e; return nil }))
}
