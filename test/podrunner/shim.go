package podrunner

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The shim is how a container's process gets its namespaces. The runner
// starts its own binary again (os.Executable) with argv[0] = shimName, in a
// new mount namespace (SysProcAttr.Unshareflags; Go makes / private in it
// before exec), in a process group of its own, stdout and stderr on the
// container's log. The shim reads a shimSpec from fd 3, joins the pod's
// network namespace, bind-mounts the volumes and image directories at their
// paths, changes to the working directory and execs the container's argv:
// the container's process keeps the shim's PID.
//
// This package's init runs the shim when the process was started as one,
// so any binary that links the runner (the test binary, hack/podrunner)
// can play it.
const shimName = "podrunner-shim"

// shimSpec is what the shim needs to become a container.
type shimSpec struct {
	NetNS  string      `json:"netns"`
	Mounts []shimMount `json:"mounts"`
	Dir    string      `json:"dir"`
	Argv   []string    `json:"argv"`
	Env    []string    `json:"env"`
}

// shimMount binds Source (a host path) at Target inside the container.
type shimMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
}

func init() {
	if filepath.Base(os.Args[0]) == shimName {
		runShim()
	}
}

func runShim() {
	// Namespaces belong to threads: this one joins the pod's network
	// namespace and then execs, so the container inherits it.
	runtime.LockOSThread()
	err := shim()
	fmt.Fprintf(os.Stderr, "podrunner: start container: %v\n", err)
	os.Exit(128)
}

func shim() error {
	in := os.NewFile(3, "spec")
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	in.Close()
	var spec shimSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("decode spec: %w", err)
	}
	ns, err := os.Open(spec.NetNS)
	if err != nil {
		return err
	}
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join %s: %w", spec.NetNS, err)
	}
	ns.Close()
	for _, m := range sortMounts(spec.Mounts) {
		if err := bind(m); err != nil {
			return err
		}
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			return err
		}
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	argv0 := spec.Argv[0]
	if !strings.Contains(argv0, "/") {
		path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		for _, kv := range spec.Env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = p
			}
		}
		os.Setenv("PATH", path)
		if argv0, err = exec.LookPath(argv0); err != nil {
			return err
		}
	}
	return syscall.Exec(argv0, spec.Argv, spec.Env)
}

// sortMounts orders mounts parents first, as container runtimes do, so a
// mount below another one's path lands inside it.
func sortMounts(ms []shimMount) []shimMount {
	out := append([]shimMount(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(filepath.Clean(out[i].Target), "/") < strings.Count(filepath.Clean(out[j].Target), "/")
	})
	return out
}

// bind mounts m.Source at m.Target, read-only if asked. The mount point is
// created if missing: a directory, or an empty file for a file source.
func bind(m shimMount) error {
	info, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(m.Target); os.IsNotExist(err) {
		if info.IsDir() {
			err = os.MkdirAll(m.Target, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(m.Target), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("mount point %s: %w", m.Target, err)
		}
	}
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// startShim starts the shim for spec with stdout and stderr on out. The
// process leads its own process group and dies with the runner.
func startShim(spec shimSpec, out io.Writer) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path: self, Args: []string{shimName}, Env: []string{},
		Stdout: out, Stderr: out, ExtraFiles: []*os.File{r},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true, Pdeathsig: syscall.SIGKILL, Unshareflags: syscall.CLONE_NEWNS,
		},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start shim: %w", err)
	}
	// The shim waits for its spec, so it has started nothing yet: what
	// it execs and forks stays in the group.
	werr := joinCPUGroup(cmd.Process.Pid)
	if werr != nil {
		werr = fmt.Errorf("move the shim into %s: %w", cpuGroup, werr)
	} else if _, err := w.Write(data); err != nil {
		werr = fmt.Errorf("send spec to the shim: %w", err)
	}
	w.Close()
	if werr != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, werr
	}
	return cmd, nil
}
