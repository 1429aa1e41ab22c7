package podrunner

// PID is the process id of the named container of pod ns/name while the
// container runs here, or 0. A container's process is the one its image's
// entrypoint (or command) became: the shim execs it in place.
func (r *Runner) PID(ns, name, container string) int {
	r.mu.Lock()
	workers := make([]*podWorker, 0, len(r.pods))
	for _, w := range r.pods {
		workers = append(workers, w)
	}
	r.mu.Unlock()
	for _, w := range workers {
		w.mu.Lock()
		if w.pod.Namespace == ns && w.pod.Name == name {
			for _, c := range w.all() {
				if c.spec.Name == container && c.proc != nil {
					pid := c.proc.Process.Pid
					w.mu.Unlock()
					return pid
				}
			}
		}
		w.mu.Unlock()
	}
	return 0
}
