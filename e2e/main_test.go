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
