// Package e2e runs sparklet through the real admission chain of the local
// control plane. It runs when SPARKLET_E2E=1 (make test sets it) and then
// fails, rather than skips, if the binaries are missing.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	testenv "github.com/sparklet/sparklet/test/env"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("SPARKLET_E2E") != "1" {
		fmt.Println("e2e: skipped; set SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test does)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binDir := os.Getenv("SPARKLET_BIN_DIR")
	for _, b := range []string{"sparklet", "kube-apiserver", "etcd", "kwok"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s missing from SPARKLET_BIN_DIR=%q: run make test, which builds it\n", b, binDir)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "sparklet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	policy, _ := filepath.Abs("../examples/policy.yaml")
	env, err = testenv.Start(ctx, testenv.Options{BinDir: binDir, Dir: dir, PolicyFile: policy,
		APIServerFlags: []string{"--feature-gates=" + futureFieldGate + "=true"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	code := m.Run()
	env.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: control-plane and webhook logs kept in %s\n", dir)
	}
	return code
}
