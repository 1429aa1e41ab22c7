package podrunner

// ContainerPID is the host pid of the running process of a container of
// the pod ns/pod, as a container runtime reports a container's init pid.
// It is false when no such container is running here.
func (r *Runner) ContainerPID(ns, pod, container string) (int, bool) {
	r.mu.Lock()
	workers := make([]*podWorker, 0, len(r.pods))
	for _, w := range r.pods {
		workers = append(workers, w)
	}
	r.mu.Unlock()
	for _, w := range workers {
		w.mu.Lock()
		p := w.pod
		if p.Namespace == ns && p.Name == pod {
			for _, c := range w.all() {
				if c.spec.Name == container && c.proc != nil && c.proc.Process != nil {
					pid := c.proc.Process.Pid
					w.mu.Unlock()
					return pid, true
				}
			}
		}
		w.mu.Unlock()
	}
	return 0, false
}
