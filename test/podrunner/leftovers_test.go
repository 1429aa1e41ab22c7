package podrunner

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestRemoveLeftovers(t *testing.T) {
	if os.Getenv("SPARKLET_E2E") != "1" || testing.Short() {
		t.Skip("set SPARKLET_E2E=1 to create bridges and network namespaces (make test does)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("must run as root (bridges and network namespaces)")
	}
	live, err := reserveNetwork("", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.close)
	dead, err := reserveNetwork("", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dead.close)
	podNS := dead.bridge + "-2"
	if err := ip("netns", "add", podNS); err != nil {
		t.Fatal(err)
	}
	// A runner killed without Stop: the kernel releases its lock, and its
	// bridge and pod namespaces stay.
	dead.lock.Close()

	cleaned, err := RemoveLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cleaned, dead.bridge) {
		t.Errorf("cleaned %v, want %s among them", cleaned, dead.bridge)
	}
	if slices.Contains(cleaned, live.bridge) {
		t.Errorf("cleaned %v, including %s, whose runner is alive", cleaned, live.bridge)
	}
	if _, err := net.InterfaceByName(dead.bridge); err == nil {
		t.Errorf("bridge %s still exists", dead.bridge)
	}
	if _, err := os.Stat("/run/netns/" + podNS); err == nil {
		t.Errorf("pod namespace %s still exists", podNS)
	}
	if _, err := net.InterfaceByName(live.bridge); err != nil {
		t.Errorf("the live runner's bridge %s: %v", live.bridge, err)
	}
}

func TestUnmountUnder(t *testing.T) {
	if os.Getenv("SPARKLET_E2E") != "1" || testing.Short() {
		t.Skip("set SPARKLET_E2E=1 to mount (make test does)")
	}
	dir := t.TempDir()
	vol := filepath.Join(dir, "pods", "uid", "volumes", "mem")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", vol, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(vol, syscall.MNT_DETACH) })
	if err := UnmountUnder(dir); err != nil {
		t.Fatal(err)
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), " "+vol+" ") {
		t.Errorf("%s is still mounted", vol)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove the runner's directory: %v", err)
	}
}
