//go:build !sidecaronly

package main

import (
	"os"
	"path/filepath"
	"syscall"
)

// slimSidecar is the sidecar-only build of this command (-tags
// sidecaronly), which sparklet's image carries next to sparklet.
const slimSidecar = "sparklet-sidecar"

// How handOver finds this binary and replaces the process; tests swap them.
var (
	executable = os.Executable
	execve     = syscall.Exec
)

// handOver replaces this process with sparklet-sidecar, given the same
// arguments, when it sits next to this binary. It links none of the other
// subcommands' packages, so every driver pod's sidecar takes about 8 MiB
// less memory, and pods that name `sparklet sidecar` (as every webhook
// version writes them) get it. Without it, the sidecar runs here.
func handOver(a *app) {
	exe, err := executable()
	if err != nil {
		return
	}
	slim := filepath.Join(filepath.Dir(exe), slimSidecar)
	if _, err := os.Stat(slim); err != nil {
		return
	}
	err = execve(slim, append([]string{slim}, a.args...), os.Environ())
	a.log.WithError(err).Warn("could not run " + slim + "; the sidecar runs in this process")
}
