package podrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type role int

const (
	roleInit    role = iota // runs to completion before the next
	roleSidecar             // an init container with restartPolicy Always
	roleMain
)

// container is one container of a pod and its current process. Its fields
// below spec are guarded by the podWorker's mu.
type container struct {
	spec corev1.Container
	role role

	state, last corev1.ContainerState
	restarts    int32
	ran         bool // a process was started once
	started     bool // running and its startup probe passed
	ready       bool
	id          string
	shim        shimSpec // the running process's, for exec probes
	proc        *exec.Cmd
	exited      chan struct{} // closed when proc has exited
	// changed is closed and replaced when started or ready change.
	changed chan struct{}
	// stop is closed when the container is stopped for good.
	stop     chan struct{}
	stopping bool
}

func newContainer(spec corev1.Container, r role) *container {
	return &container{spec: spec, role: r, state: waiting("PodInitializing", ""),
		changed: make(chan struct{}), stop: make(chan struct{})}
}

// errStopped: the container was stopped before a process could start.
var errStopped = errors.New("container stopped")

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func (w *podWorker) setWaiting(c *container, reason, message string) {
	w.mu.Lock()
	c.state = waiting(reason, message)
	w.mu.Unlock()
	w.markDirty()
}

// signal wakes whoever waits on c.changed; called with mu held.
func (c *container) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// supervise runs c until it is done for good under policy and returns its
// last exit code. A container that could not start (no image mapping, env
// or volume errors) is retried whatever the policy, as the kubelet retries
// image pulls. Restarts back off from RestartBackoff to MaxRestartBackoff.
func (w *podWorker) supervise(c *container, policy corev1.RestartPolicy) int {
	backoff := w.r.opts.RestartBackoff
	for {
		code, err := w.runOnce(c)
		w.mu.Lock()
		stop := c.stopping || w.ctx.Err() != nil
		w.mu.Unlock()
		if stop || errors.Is(err, errStopped) {
			return code
		}
		if err == nil {
			if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && code == 0) {
				return code
			}
			w.mu.Lock()
			c.last = c.state
			c.state = waiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s",
				backoff, c.spec.Name, w.pod.Name))
			w.mu.Unlock()
			w.markDirty()
		}
		select {
		case <-time.After(backoff):
		case <-c.stop:
			return code
		case <-w.ctx.Done():
			return code
		}
		backoff = min(2*backoff, w.r.opts.MaxRestartBackoff)
	}
}

// runOnce starts one process of c and waits for it to exit.
func (w *podWorker) runOnce(c *container) (int, error) {
	pod := w.current()
	img, err := w.r.opts.Images(c.spec.Image)
	if err != nil {
		w.setWaiting(c, "ErrImagePull", err.Error())
		return 0, err
	}
	spec, err := w.shimSpec(pod, c, img)
	if err != nil {
		w.setWaiting(c, "CreateContainerConfigError", err.Error())
		return 0, err
	}
	logPath := filepath.Join(w.r.logDir(pod), c.spec.Name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	offset, _ := logf.Seek(0, io.SeekEnd)

	w.mu.Lock()
	if c.stopping || w.ctx.Err() != nil {
		w.mu.Unlock()
		return 0, errStopped
	}
	cmd, err := startShim(spec, logf)
	if err != nil {
		w.mu.Unlock()
		w.setWaiting(c, "RunContainerError", err.Error())
		return 0, err
	}
	if c.ran {
		c.restarts++
	}
	startedAt := metav1.Now()
	c.ran, c.proc, c.exited, c.shim = true, cmd, make(chan struct{}), spec
	c.id = fmt.Sprintf("podrunner://%s/%s/%d", pod.UID, c.spec.Name, c.restarts)
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	c.started = c.spec.StartupProbe == nil && postStartExec(c.spec) == nil
	c.ready = false
	c.signal()
	if c.role == roleMain && w.phase == corev1.PodPending {
		w.phase = corev1.PodRunning // a pod runs once a main container has started
	}
	exited := c.exited
	w.mu.Unlock()
	w.markDirty()

	probeCtx, stopProbes := context.WithCancel(w.ctx)
	go w.probe(probeCtx, c, cmd, exited)
	_ = cmd.Wait()
	// What the process left behind in its group dies with it, as a
	// runtime's cgroup kill ends a container.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	stopProbes()
	code := exitCode(cmd.ProcessState)
	term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Completed",
		StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: c.id}
	if code != 0 {
		term.Reason = "Error"
		if c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			term.Message = logTail(logPath, offset)
		}
	}
	w.mu.Lock()
	c.proc = nil
	close(exited)
	c.state = corev1.ContainerState{Terminated: term}
	c.started, c.ready = false, false
	c.signal()
	w.mu.Unlock()
	w.markDirty()
	return code, nil
}

// shimSpec resolves what c's process needs: env as the kubelet builds it,
// the image's entrypoint, mounts and working directory.
func (w *podWorker) shimSpec(pod *corev1.Pod, c *container, img *Image) (shimSpec, error) {
	w.mu.Lock()
	podIP, n := w.podIP, w.net
	w.mu.Unlock()
	if n == nil {
		return shimSpec{}, errors.New("the pod has no network namespace")
	}
	env, err := containerEnv(w.ctx, envInput{
		pod: pod, podIPs: []string{podIP}, hostIP: w.r.HostIP(), allocatable: w.r.allocatable(),
		service: serviceEnv(w.r.HostIP(), w.r.APIServerPort()), objects: w.r,
	}, &c.spec)
	if err != nil {
		return shimSpec{}, err
	}
	command, args := expandCommand(c.spec.Command, env), expandCommand(c.spec.Args, env)
	full := mergeEnv(img.Env, env)
	argv, finalEnv := append(command, args...), full
	if img.Entrypoint != nil {
		if argv, finalEnv, err = img.Entrypoint(command, args, full); err != nil {
			return shimSpec{}, fmt.Errorf("image %s entrypoint: %w", c.spec.Image, err)
		}
	}
	if len(argv) == 0 {
		return shimSpec{}, fmt.Errorf("no command to run: image %s has no entrypoint and the container no command", c.spec.Image)
	}
	mounts := imageMounts(img.Binds)
	w.volMu.Lock()
	vm, err := w.vols.mountsFor(&c.spec)
	w.volMu.Unlock()
	if err != nil {
		return shimSpec{}, err
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = img.WorkingDir
	}
	mounts = append(mounts, vm...)
	if dir != "" && !mountedAt(mounts, dir) && len(img.Binds) > 0 {
		// The image's files are bound read-only; a container runtime would
		// give the container a writable layer, and Spark writes the files
		// and jars it fetches into its working directory. A directory of
		// the container's own, kept with the pod's volumes, stands in.
		layer := filepath.Join(w.vols.root, ".layers", c.spec.Name)
		if err := os.MkdirAll(layer, 0o777); err != nil {
			return shimSpec{}, err
		}
		mounts = append(mounts, shimMount{Source: layer, Target: dir})
	}
	return shimSpec{NetNS: n.path(), Mounts: mounts, Dir: dir, Argv: argv, Env: finalEnv}, nil
}

// exitCode is the process's exit status, or 128+signal as container
// runtimes report a killed process.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// logTail is the end of what a container wrote from offset on: its last 80
// lines, at most 2048 bytes, the kubelet's limits for a termination message
// taken from the log.
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	out := bytes.Join(lines, []byte("\n"))
	if len(out) > 2048 {
		out = out[len(out)-2048:]
	}
	return strings.TrimSpace(string(out))
}

// kill stops c for good: SIGTERM to its process group, SIGKILL at deadline.
func (w *podWorker) kill(c *container, deadline time.Time) {
	w.mu.Lock()
	if !c.stopping {
		c.stopping = true
		close(c.stop)
	}
	proc, exited := c.proc, c.exited
	w.mu.Unlock()
	if proc != nil {
		terminate(proc, exited, deadline)
	}
}

// terminate sends SIGTERM to a process group and SIGKILL at deadline, and
// waits for the process to exit.
func terminate(proc *exec.Cmd, exited <-chan struct{}, deadline time.Time) {
	_ = syscall.Kill(-proc.Process.Pid, syscall.SIGTERM)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// imageMounts are an image's binds, read-only, sorted by target so that a
// bind comes after the binds that hold its target (/opt/spark before
// /opt/spark/conf): a path sorts before every path it is a prefix of.
func imageMounts(binds map[string]string) []shimMount {
	var mounts []shimMount
	for _, target := range slices.Sorted(maps.Keys(binds)) {
		mounts = append(mounts, shimMount{Source: binds[target], Target: target, ReadOnly: true})
	}
	return mounts
}

// mountedAt reports whether a mount's target is path.
func mountedAt(mounts []shimMount, path string) bool {
	for _, m := range mounts {
		if filepath.Clean(m.Target) == filepath.Clean(path) {
			return true
		}
	}
	return false
}
