package sidecar

import (
	"os"
	"testing"
)

// The conf init container lets the JVM start once the serving file is
// there (patches.ServingFile); one an earlier run of the sidecar left must
// not stand for this one, which writes its own once it serves.
func TestServingFile(t *testing.T) {
	sc := newTestSidecar(t, "")
	if err := os.WriteFile(sc.servingFile(), []byte("left by an earlier run"), 0o444); err != nil {
		t.Fatal(err)
	}
	h := startSidecar(t, sc, driver())
	got, err := os.ReadFile(sc.servingFile())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != h.sc.APIAddr() {
		t.Errorf("serving file says %q, want the address the sidecar serves on, %q", got, h.sc.APIAddr())
	}
}
