// Package realspark runs stock Spark JVMs through the webhook and the
// sidecar: the pinned distributions of hack/spark/versions play the
// apache/spark images, and the pod runner plays the kubelet. It runs when
// SPARKLET_E2E=1 (make test sets it), as root, and then fails, rather than
// skips, if a binary or a distribution is missing.
package realspark

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparklet/sparklet/hack/spark"
	testenv "github.com/sparklet/sparklet/test/env"
)

var (
	env   *testenv.Env
	dists []spark.Dist
)

func TestMain(m *testing.M) {
	var err error
	if dists, err = spark.Pinned(); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		os.Exit(1)
	}
	if os.Getenv("SPARKLET_E2E") == "1" {
		for _, d := range dists {
			if err := d.Installed(os.Getenv("SPARKLET_BIN_DIR")); err != nil {
				fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
				os.Exit(1)
			}
		}
	}
	policy, _ := filepath.Abs("testdata/policy.yaml")
	testenv.Main(m, "realspark", testenv.Options{PolicyFile: policy, PodRunner: true}, func(e *testenv.Env) { env = e })
}
