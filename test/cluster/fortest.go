package cluster

import (
	"context"
	"testing"
)

// StartForTest starts a control plane for t from the binaries in binDir,
// with its state in a directory of t's, and stops it when t ends. A failed
// start fails t.
func StartForTest(ctx context.Context, t testing.TB, binDir string) *Cluster {
	t.Helper()
	c, err := Start(ctx, Options{BinDir: binDir, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}
