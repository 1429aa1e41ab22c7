package cluster

// PIDs are the control plane's processes by name (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager, kwok), for measuring them.
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.name] = p.cmd.Process.Pid
	}
	return out
}
