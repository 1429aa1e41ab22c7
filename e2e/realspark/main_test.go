// Package realspark runs stock Spark JVMs through the webhook and the
// sidecar: the pinned distributions of hack/spark/versions play the
// apache/spark images, and the pod runner plays the kubelet. It runs when
// SPARKLET_E2E=1 (make test sets it), as root, and then fails, rather than
// skips, if a binary or a distribution is missing.
package realspark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sparklet/sparklet/hack/spark"
	testenv "github.com/sparklet/sparklet/test/env"
)

var (
	env   *testenv.Env
	dists []spark.Dist
	files *fileServer
)

func TestMain(m *testing.M) {
	if os.Getenv("SPARKLET_E2E") != "1" {
		fmt.Println("realspark: skipped; set SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test does)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binDir := os.Getenv("SPARKLET_BIN_DIR")
	var err error
	if dists, err = spark.Pinned(); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		return 1
	}
	for _, d := range dists {
		if err := d.Installed(binDir); err != nil {
			fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "sparklet-realspark-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	policy := filepath.Join(dir, "policy.yaml")
	if err := writePolicy(policy, policyFilesPrefix); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{BinDir: binDir, Dir: dir, PolicyFile: policy, PodRunner: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	if files, err = serveFiles(ctx, policy); err != nil {
		env.Stop()
		fmt.Fprintf(os.Stderr, "realspark: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	code := m.Run()
	files.close()
	env.Stop()
	if code == 0 && os.Getenv("SPARKLET_KEEP") == "" {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "realspark: control-plane, webhook and pod logs kept in %s\n", dir)
	}
	return code
}
