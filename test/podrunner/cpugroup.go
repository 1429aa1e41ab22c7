package podrunner

import (
	"errors"
	"os"
	"strconv"
	"sync"
)

// cpuGroup is the cgroup v1 cpu group every container of every pod runner
// on this machine runs in. The scheduler weighs each task of the root cpu
// group on its own against each child group as a whole, so without it a
// few busy JVMs of the pod runner starve a real node's pods, which share
// the one group of the kubelet's cgroup root (test/node): in one CI run a
// node executor's JVM took two minutes to register beside the real-Spark
// suite. In a group of their own, the pod runner's containers together
// weigh as much as the node's pods together.
const cpuGroup = cpuHierarchy + cpuGroupName

// cpuHierarchy is where cgroup v1 mounts the cpu controller; cpuGroupName
// is the group's path in it, as /proc/<pid>/cgroup names it.
const cpuHierarchy, cpuGroupName = "/sys/fs/cgroup/cpu", "/sparklet-pod-runner"

var cpuGroupOnce struct {
	sync.Once
	ok bool
}

// joinCPUGroup moves process pid, with all its threads, into cpuGroup.
// Where there is no cgroup v1 cpu hierarchy, or it cannot be written (not
// root, cgroup v2), it does nothing: the group only shares CPU fairly.
func joinCPUGroup(pid int) error {
	cpuGroupOnce.Do(func() {
		if _, err := os.Stat(cpuHierarchy + "/cgroup.procs"); err != nil {
			return
		}
		err := os.Mkdir(cpuGroup, 0o755)
		cpuGroupOnce.ok = err == nil || errors.Is(err, os.ErrExist)
	})
	if !cpuGroupOnce.ok {
		return nil
	}
	return os.WriteFile(cpuGroup+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0o644)
}
