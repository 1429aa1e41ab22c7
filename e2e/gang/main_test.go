// Package gang tests gang scheduling of sparklet's drivers and executors
// with a real batch scheduler, Apache YuniKorn, on the local control plane.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then fails, rather
// than skips, if the binaries are missing.
package gang

import (
	"os"
	"path/filepath"
	"testing"

	testenv "github.com/sparklet/sparklet/test/env"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	policy, _ := filepath.Abs("testdata/policy.yaml")
	os.Exit(testenv.Main(m, "gang", testenv.Options{PolicyFile: policy}, func(e *testenv.Env) error { env = e; return nil }))
}
