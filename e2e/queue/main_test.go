package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/schedulers"
)

var (
	env   *testenv.Env
	kueue *schedulers.Kueue
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts the control plane, sparklet's webhook with testPolicy and
// Kueue, runs the tests and stops them.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sparklet-queue-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(testPolicy), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := testenv.Main(m, "queue", testenv.Options{PolicyFile: policy}, func(e *testenv.Env) error {
		env = e
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		k, err := schedulers.StartKueue(ctx, schedulers.KueueOptions{
			BinDir: os.Getenv("SPARKLET_BIN_DIR"), Dir: filepath.Join(filepath.Dir(e.Cluster.Dir()), "kueue"), Cluster: e.Cluster})
		if err != nil {
			return fmt.Errorf("start Kueue: %w", err)
		}
		kueue = k
		return nil
	})
	if kueue != nil {
		kueue.Stop()
	}
	return code
}
