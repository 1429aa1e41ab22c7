package e2egate

import (
	"os"
	"testing"
)

// BinDir skips t unless SPARKLET_E2E=1 and returns SPARKLET_BIN_DIR. why
// completes the skip message: what the test needs the binaries for.
func BinDir(t testing.TB, why string) string {
	t.Helper()
	if !asked() {
		t.Skip("set SPARKLET_E2E=1 and SPARKLET_BIN_DIR " + why + " (make test does)")
	}
	return os.Getenv("SPARKLET_BIN_DIR")
}

// asked reports whether the end-to-end tests were asked for
// (SPARKLET_E2E=1, as make test sets it).
func asked() bool { return os.Getenv("SPARKLET_E2E") == "1" }
