package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/test/cluster"
)

// Addresses and names of the node. They are fixed, so a leftover of a
// killed run is found and removed by the next.
const (
	// Name is the node's name.
	Name = "sparklet-node"
	// NetNS is the node's network namespace, in /run/netns.
	NetNS = "sparklet-node"
	// HostIP is the host end of the veth pair: the API server's advertised
	// address, which the kubernetes Service's endpoint names.
	HostIP = "10.214.0.1"
	// IP is the node's InternalIP, where the API server reaches the kubelet.
	IP = "10.214.0.2"
	// PodCIDR is the range pods get their addresses from.
	PodCIDR = "10.215.0.0/24"
	// ServiceCIDR is the control plane's Service range (test/cluster).
	ServiceCIDR = "10.0.0.0/24"
	// DNSIP is the cluster DNS Service's address.
	DNSIP = "10.0.0.10"
	// ClusterDomain is the DNS domain of Services and pods.
	ClusterDomain = "cluster.local"

	hostLink = "sparklet-nh0"
	nodeLink = "sparklet-nn0"
	bridge   = "sparklet-cni0"
	// cgroupRoot is where the kubelet puts every pod's cgroup, so what a
	// killed run left is found by its cgroups.
	cgroupRoot = "/sparklet-node"
	lockFile   = "/run/sparklet-node.lock"
)

// Binaries are the programs the node runs from Options.BinDir.
var Binaries = []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "coredns"}

// Options configure a node.
type Options struct {
	// BinDir holds Binaries (hack/node/build.sh).
	BinDir string
	// Dir holds the node's state: containerd's and the kubelet's roots,
	// configuration, certificates, pod logs and one log per component.
	Dir string
	// Images are image tarballs (docker save layout) to import before the
	// node registers; the sandbox image must be among them.
	Images []string
	// SandboxImage is the pause image's reference, which containerd pins.
	SandboxImage string
}

// ClusterOptions adapts a control plane's options to a real node: the API
// server also listens on HostIP and advertises it, so that pods reach it
// through the kubernetes Service, and reaches kubelets at their
// InternalIP. It proxies an APIService's requests to the Service's
// endpoint address rather than its cluster IP (--enable-aggregator-routing;
// k8s.io/kubernetes v1.37.2, cmd/kube-apiserver/app/server.go,
// buildServiceResolver): metrics-server runs on the host (test/
// metricsserver), which the node's kube-proxy could only reach back to
// through a hairpin. No kwok: pods go to the real node.
func ClusterOptions(o cluster.Options) cluster.Options {
	o.APIServerFlags = append(o.APIServerFlags,
		"--bind-address", "0.0.0.0", "--advertise-address", HostIP,
		"--endpoint-reconciler-type", "lease",
		"--kubelet-preferred-address-types", "InternalIP",
		"--enable-aggregator-routing=true")
	o.ExtraSANs = append(o.ExtraSANs, HostIP)
	o.NoKwok = true
	return o
}

// Node is a running real node.
type Node struct {
	opts    Options
	cluster *cluster.Cluster
	lock    *os.File
	// lockWait is how long Start waited for another real node to stop.
	lockWait time.Duration
	procs    []proc
}

type proc struct {
	name string
	pid  int
	done <-chan struct{}
}

// Start brings the node up on a control plane started with ClusterOptions
// and returns once it is Ready and cluster DNS answers.
func Start(ctx context.Context, c *cluster.Cluster, opts Options) (*Node, error) {
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: build it with hack/node/build.sh (make node-binaries)", b, opts.BinDir)
		}
	}
	if opts.SandboxImage == "" {
		return nil, errors.New("node: SandboxImage is required (the pause image's reference)")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	for _, sub := range []string{"logs", "pki", "cni", "cni-ipam", "pod-logs", "kubelet", "containerd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	n := &Node{opts: opts, cluster: c}
	waitStart := time.Now()
	if n.lock, err = takeLock(ctx); err != nil {
		return nil, err
	}
	n.lockWait = time.Since(waitStart)
	// Waiting for another run's node is not part of starting this one: ctx's
	// deadline moves on by the wait.
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(n.lockWait))
		defer cancel()
	}
	if err := removeLeftovers(); err != nil {
		n.lock.Close()
		return nil, err
	}
	if err := recordStateDir(dir); err != nil {
		n.lock.Close()
		return nil, err
	}
	if err := n.start(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	if err := setupNetwork(); err != nil {
		return fmt.Errorf("node network: %w", err)
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(ctx); err != nil {
		return err
	}
	if err := n.startKubelet(ctx); err != nil {
		return err
	}
	if err := n.startKubeProxy(); err != nil {
		return err
	}
	if err := n.startDNS(ctx); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// Client is an admin clientset of the node's control plane.
func (n *Node) Client() kubernetes.Interface { return n.cluster.Client() }

// LockWait is how long Start waited for another real node on the machine
// to stop before starting this one.
func (n *Node) LockWait() time.Duration { return n.lockWait }

// Dir is where the node keeps its files; logs are in Dir/logs.
func (n *Node) Dir() string { return n.opts.Dir }

// LogTail returns the last lines of a component's log.
func (n *Node) LogTail(component string, lines int) string {
	return cluster.Tail(n.path("logs", component+".log"), lines)
}

// PodLogsDir is where the kubelet writes containers' logs.
func (n *Node) PodLogsDir() string { return n.path("pod-logs") }

// Stop ends every pod's containers and the node's processes, unmounts what
// they mounted and removes the network namespace.
func (n *Node) Stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		cluster.Terminate(n.procs[i].pid, n.procs[i].done)
	}
	n.procs = nil
	if err := removeLeftovers(); err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
	}
	if n.lock != nil {
		n.lock.Close()
		n.lock = nil
	}
}

// server is the API server's address as the node reaches it.
func (n *Node) server() string {
	port, _ := n.cluster.APIServerPort()
	return "https://" + HostIP + ":" + strconv.Itoa(port)
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func (n *Node) path(parts ...string) string {
	return filepath.Join(append([]string{n.opts.Dir}, parts...)...)
}

// run starts one of the node's programs in the node's network namespace,
// logging to logs/<name>.log. nsenter and env exec it, so the process is
// the program itself.
func (n *Node) run(name string, args ...string) error {
	// env puts BinDir first on PATH: containerd finds its shim there, and
	// the shim finds runc on the rest.
	nsArgs := append([]string{"--net=" + netnsPath(), "--", "env", "PATH=" + n.opts.BinDir + ":" + os.Getenv("PATH"),
		filepath.Join(n.opts.BinDir, name)}, args...)
	cmd, done, err := cluster.Spawn("/usr/bin/nsenter", nsArgs, n.path("logs", name+".log"), false)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, proc{name, cmd.Process.Pid, done})
	return nil
}

// lockWait is how long Start waits for another run's node to stop.
const lockWait = time.Hour

// takeLock holds the machine's one real node until the file is closed. It
// waits up to lockWait, whatever ctx's deadline.
func takeLock(ctx context.Context) (*os.File, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockWait)
	defer cancel()
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockFile, err)
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return f, nil
	case <-ctx.Done():
		f.Close() // the flock goroutine ends with an error once the file is closed
		return nil, fmt.Errorf("another real node holds %s: %w", lockFile, ctx.Err())
	}
}

// waitFor polls cond until it holds or timeout passes. It gives up at once
// with the log's tail when one of the node's programs has exited, and on an
// error from cond: conditions report only what waiting cannot mend.
func (n *Node) waitFor(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := n.Alive(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Alive reports which of the node's programs (containerd, the kubelet,
// kube-proxy, CoreDNS) has exited, with its log's tail; nil while all run.
func (n *Node) Alive() error {
	for _, p := range n.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited:\n%s", p.name, n.LogTail(p.name, 30))
		default:
		}
	}
	return nil
}
