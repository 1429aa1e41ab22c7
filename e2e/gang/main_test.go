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
