//go:build !sidecaronly

package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSidecarHandsOver: `sparklet sidecar` runs sparklet-sidecar from its
// own directory with the same command line, and runs the sidecar itself
// when there is none.
func TestSidecarHandsOver(t *testing.T) {
	dir := t.TempDir()
	defer func(e func() (string, error), x func(string, []string, []string) error) { executable, execve = e, x }(executable, execve)
	executable = func() (string, error) { return filepath.Join(dir, "sparklet"), nil }
	var path string
	var argv []string
	execve = func(p string, a []string, _ []string) error {
		path, argv = p, a
		return errors.New("exec refused by the test")
	}
	args := []string{"--log-level", "error", "sidecar", "--pod-name", "pi"}

	// No sparklet-sidecar: the sidecar runs here (and, with no namespace,
	// fails to start).
	if _, _, code := runCLI(t, "", args...); code == 0 || path != "" {
		t.Fatalf("without sparklet-sidecar: exit %d, exec %q", code, path)
	}

	slim := filepath.Join(dir, "sparklet-sidecar")
	if err := os.WriteFile(slim, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "", args...)
	if path != slim || !slices.Equal(argv, append([]string{slim}, args...)) {
		t.Fatalf("exec %q %q; want %q with %q", path, argv, slim, args)
	}
	// An exec that fails leaves the sidecar to run here.
	if code == 0 || stderr == "" {
		t.Errorf("after a failed exec: exit %d, stderr %q", code, stderr)
	}
}
