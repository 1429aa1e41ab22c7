package schedulers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The shim gives Kueue the files it reads from fixed paths under /etc
// without writing to the host's /etc. kueueCommand starts the running
// binary again with argv[0] = kueueShimName in a new mount namespace
// (SysProcAttr.Unshareflags; Go makes / private in it before exec). The
// shim mounts a read-only overlay on /etc whose upper layer is the
// directory in $SPARKLET_KUEUE_ETC, then execs kueue (argv[1]) with the
// remaining arguments. Only Kueue's process sees the overlay.
const (
	kueueShimName   = "sparklet-kueue-shim"
	kueueShimEtcEnv = "SPARKLET_KUEUE_ETC"
)

func init() {
	if filepath.Base(os.Args[0]) == kueueShimName {
		err := kueueShim()
		fmt.Fprintf(os.Stderr, "kueue shim: %v\n", err)
		os.Exit(128)
	}
}

func kueueShim() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: %s KUEUE [ARG...]", kueueShimName)
	}
	dir := os.Getenv(kueueShimEtcEnv)
	if dir == "" || strings.ContainsAny(dir, ":,") {
		return fmt.Errorf("%s=%q: want a directory whose path has no ':' or ','", kueueShimEtcEnv, dir)
	}
	if err := unix.Mount("overlay", "/etc", "overlay", unix.MS_RDONLY, "lowerdir="+dir+":/etc"); err != nil {
		return fmt.Errorf("overlay %s on /etc: %w", dir, err)
	}
	return syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
}
