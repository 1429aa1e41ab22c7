package node

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

func netnsPath() string { return filepath.Join("/run/netns", NetNS) }

// setupNetwork makes the node's network namespace and the veth pair that
// joins it to the host. The host routes the pod and Service ranges to the
// node, where kube-proxy's rules take the Service addresses; the node
// forwards between its bridge and the veth and has no default route.
func setupNetwork() error {
	steps := [][]string{
		{"ip", "netns", "add", NetNS},
		{"ip", "link", "add", hostLink, "type", "veth", "peer", "name", nodeLink, "netns", NetNS},
		{"ip", "addr", "add", HostIP + "/30", "dev", hostLink},
		{"ip", "link", "set", hostLink, "up"},
		{"ip", "-n", NetNS, "link", "set", "lo", "up"},
		{"ip", "-n", NetNS, "addr", "add", IP + "/30", "dev", nodeLink},
		{"ip", "-n", NetNS, "link", "set", nodeLink, "up"},
		{"ip", "route", "add", PodCIDR, "via", IP, "dev", hostLink},
		{"ip", "route", "add", ServiceCIDR, "via", IP, "dev", hostLink},
		// Forwarding and bridge netfilter inside the node's namespace
		// only: Service traffic between pods on the bridge passes
		// kube-proxy's rules in both directions.
		{"ip", "netns", "exec", NetNS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// removeLeftovers ends what a node, running or killed, left on the
// machine: the processes in its network namespace and cgroups, its mounts,
// the namespace itself (with the veth pair and the host's routes through
// it) and the pods' network namespaces.
func removeLeftovers() error {
	var errs []string
	for range 3 { // a process may fork while the others are killed
		pids := nsPIDs()
		pids = append(pids, cgroupPIDs()...)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			waitGone(pid)
		}
	}
	if err := unmountUnder(); err != nil {
		errs = append(errs, err.Error())
	} else {
		_ = os.Remove(stateDirsFile)
	}
	removeCgroups()
	if _, err := os.Stat(netnsPath()); err == nil {
		if out, err := exec.Command("ip", "netns", "delete", NetNS).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("ip netns delete %s: %v: %s", NetNS, err, out))
		}
	}
	// Deleting the namespace deletes the veth pair; a host end left
	// without its peer is deleted here.
	_ = exec.Command("ip", "link", "delete", hostLink).Run()
	if len(errs) > 0 {
		return fmt.Errorf("removing a real node's leftovers: %s", strings.Join(errs, "; "))
	}
	return nil
}

// nsPIDs are the processes in the node's network namespace: containerd,
// the kubelet, kube-proxy, CoreDNS and the runc shims.
func nsPIDs() []int {
	out, err := exec.Command("ip", "netns", "pids", NetNS).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cgroupHierarchies are the cgroup v1 controllers the kubelet makes pod
// cgroups in; "pids" lists every process of every pod.
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + cgroupRoot)
	return dirs
}

// makeCgroupRoot creates cgroupRoot in every cgroup v1 hierarchy, as the
// kubelet refuses a cgroup root that does not exist; a new cpuset cgroup
// starts with no CPUs and no memory nodes, so it gets its parent's.
func makeCgroupRoot() error {
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		dir := h + cgroupRoot
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// cgroupPIDs are the processes of the node's pods.
func cgroupPIDs() []int {
	var pids []int
	for _, root := range cgroupHierarchies() {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the node's empty cgroups, deepest first.
func removeCgroups() {
	for _, root := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// waitGone waits for a killed process to be reaped or to vanish.
func waitGone(pid int) {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err == nil {
		return
	}
	for range 200 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(data), ") Z ") {
			return
		}
		// Polling a foreign process's exit after SIGKILL: there is no
		// event to wait on for a process that is not our child.
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10_000_000}, nil)
	}
}

// mountRoots are the directories whose mounts belong to a real node: its
// state directories (Options.Dir, recorded when the node starts) and the
// pods' network namespaces containerd pins there.
var mountRoots []string

// unmountUnder unmounts every mount below the node's directories, deepest
// first.
func unmountUnder() error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var targets []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		target := unescapeMount(fields[4])
		for _, root := range stateDirs() {
			if target == root || strings.HasPrefix(target, root+"/") {
				targets = append(targets, target)
			}
		}
	}
	var errs []string
	for i := len(targets) - 1; i >= 0; i-- {
		if err := syscall.Unmount(targets[i], syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Sprintf("unmount %s: %v", targets[i], err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// stateDirs are the directories of the nodes this machine ran, recorded in
// the lock directory so that a later run finds a killed run's mounts.
func stateDirs() []string {
	data, _ := os.ReadFile(stateDirsFile)
	return append(mountRoots, strings.Fields(string(data))...)
}

const stateDirsFile = "/run/sparklet-node.dirs"

// recordStateDir adds dir to the directories removeLeftovers looks in.
func recordStateDir(dir string) error {
	mountRoots = append(mountRoots, dir)
	f, err := os.OpenFile(stateDirsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, dir)
	return err
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
