package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Container is what the kernel holds of one running container: what only
// a real node shows, and tests check.
type Container struct {
	// MemoryLimit is the memory cgroup's limit in bytes.
	MemoryLimit int64
	// MemoryPeak is the most memory the cgroup has used, in bytes
	// (memory.max_usage_in_bytes of cgroup v1, page cache included).
	MemoryPeak int64
	// UID and GID are the effective user and group of its first process.
	UID, GID int
	// CapEff is its first process's effective capabilities (hex).
	CapEff string
	// ReadOnlyRoot is whether its root filesystem is mounted read-only.
	ReadOnlyRoot bool
}

// Inspect finds the named running container of pod in the kubelet's
// memory cgroups and reads its limit and its first process's identity.
func (n *Node) Inspect(pod *corev1.Pod, container string) (*Container, error) {
	dir, err := cgroupDir(pod, container)
	if err != nil {
		return nil, err
	}
	c := &Container{}
	for file, v := range map[string]*int64{"memory.limit_in_bytes": &c.MemoryLimit, "memory.max_usage_in_bytes": &c.MemoryPeak} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		if *v, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	pids, err := cgroupProcs(dir)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("container %s has no process", container)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "status"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		switch {
		case key == "Uid" && len(fields) > 1:
			c.UID, _ = strconv.Atoi(fields[1])
		case key == "Gid" && len(fields) > 1:
			c.GID, _ = strconv.Atoi(fields[1])
		case key == "CapEff" && len(fields) > 0:
			c.CapEff = fields[0]
		}
	}
	mounts, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "mounts"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == "/" {
			c.ReadOnlyRoot = strings.HasPrefix(f[3], "ro,") || f[3] == "ro"
		}
	}
	return c, nil
}

// Processes returns the host pids of the processes of pod's named running
// container, as its memory cgroup lists them: what a test signals to
// kill a container's process as the kernel would (the OOM killer, a crash).
func (n *Node) Processes(pod *corev1.Pod, container string) ([]int, error) {
	dir, err := cgroupDir(pod, container)
	if err != nil {
		return nil, err
	}
	return cgroupProcs(dir)
}

// cgroupDir finds the memory cgroup of pod's named running container: the
// kubelet names it by the pod's uid and the container's id.
func cgroupDir(pod *corev1.Pod, container string) (string, error) {
	var id string
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if s.Name == container && s.State.Running != nil {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	if id == "" {
		return "", fmt.Errorf("pod %s/%s has no running container %s", pod.Namespace, pod.Name, container)
	}
	var dir string
	root := "/sys/fs/cgroup/memory" + cgroupRoot
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id && strings.Contains(path, string(pod.UID)) {
			dir = path
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		return "", fmt.Errorf("no memory cgroup of container %s (%s) under %s", container, id, root)
	}
	return dir, nil
}

func cgroupProcs(dir string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s/cgroup.procs: %w", dir, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
