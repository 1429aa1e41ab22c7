package podrunner

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// RemoveLeftovers removes the bridges and pod network namespaces of
// runners that ended without Stop (killed, say): those whose lock nobody
// holds. Live runners keep theirs. It returns the bridges it cleaned.
func RemoveLeftovers() ([]string, error) {
	locks, err := filepath.Glob(filepath.Join(lockDir, "*.lock"))
	if err != nil {
		return nil, err
	}
	var cleaned []string
	for _, path := range locks {
		bridge := strings.TrimSuffix(filepath.Base(path), ".lock")
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return cleaned, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // a live runner's
			}
			return cleaned, err
		}
		n := &network{bridge: bridge}
		if n.hasLeftovers() {
			n.removeLeftovers()
			cleaned = append(cleaned, bridge)
		}
		f.Close()
	}
	return cleaned, nil
}

// hasLeftovers reports whether the bridge or a pod namespace on it exists.
func (n *network) hasLeftovers() bool {
	if _, err := net.InterfaceByName(n.bridge); err == nil {
		return true
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), n.bridge+"-") {
			return true
		}
	}
	return false
}

// UnmountUnder detaches every mount below dir, deepest first: the tmpfs
// volumes a runner killed without Stop left in its Dir, which would
// otherwise keep the directory from being removed.
func UnmountUnder(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return err
	}
	var under []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			under = append(under, f[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	for _, m := range under {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
			return &os.PathError{Op: "unmount", Path: m, Err: err}
		}
	}
	return nil
}
