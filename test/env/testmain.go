package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Main is the body of the TestMain of an end-to-end test package named
// name, returning its exit code: unless SPARKLET_E2E=1 it skips every test; otherwise it starts an Env from the
// binaries in SPARKLET_BIN_DIR (failing, not skipping, if one is missing),
// hands it to use (an error from use fails the package), runs the tests and
// stops it. The state directory, with
// every log, is kept when a test failed or SPARKLET_KEEP is set.
func Main(m *testing.M, name string, opts Options, use func(*Env) error) int {
	if os.Getenv("SPARKLET_E2E") != "1" {
		fmt.Printf("%s: skipped; set SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test does)\n", name)
		return 0
	}
	return runMain(m, name, opts, use)
}

func runMain(m *testing.M, name string, opts Options, use func(*Env) error) int {
	opts.BinDir = os.Getenv("SPARKLET_BIN_DIR")
	for _, b := range []string{"sparklet", "sparklet-sidecar", "kube-apiserver", "etcd", "kwok"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s missing from SPARKLET_BIN_DIR=%q: run make test, which builds it\n", name, b, opts.BinDir)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "sparklet-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\nlogs are in %s\n", name, err, dir)
		return 1
	}
	if err := use(e); err != nil {
		e.Stop()
		fmt.Fprintf(os.Stderr, "%s: %v\nlogs are in %s\n", name, err, dir)
		return 1
	}
	code := m.Run()
	e.Stop()
	if code == 0 && os.Getenv("SPARKLET_KEEP") == "" {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "%s: logs of the control plane, the webhook and the pods kept in %s\n", name, dir)
	}
	return code
}
