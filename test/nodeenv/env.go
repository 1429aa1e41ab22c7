package nodeenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/hack/nodeimages"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/node"
)

// Options configure an Env.
type Options struct {
	// BinDir holds the control plane's and the node's binaries, helm and
	// images/ (make cluster-binaries node-binaries helm-binary node-images).
	BinDir string
	// Dir holds the control plane's and the node's state and logs.
	Dir string
	// SparkVersions are the apache/spark images the node imports besides
	// the pause, kubectl and sparklet images.
	SparkVersions []string
}

// Env is a running control plane with a Ready real node.
type Env struct {
	Cluster *cluster.Cluster
	Node    *node.Node
	Client  kubernetes.Interface
	// ControlPlaneUp and NodeUp are how long the control plane took to
	// start, and the node after it to be Ready with cluster DNS, not
	// counting NodeWait, the wait for another real node to stop.
	ControlPlaneUp, NodeUp, NodeWait time.Duration
	opts                             Options
}

// Start brings up the control plane and the node. The node waits for any
// other real node on the machine to stop (node.Start's lock).
func Start(ctx context.Context, opts Options) (*Env, error) {
	images, err := nodeimages.Select(opts.BinDir, opts.SparkVersions...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := cluster.Start(ctx, node.ClusterOptions(cluster.Options{BinDir: opts.BinDir, Dir: filepath.Join(opts.Dir, "cluster")}))
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	e := &Env{Cluster: c, Client: c.Client(), ControlPlaneUp: time.Since(start), opts: opts}
	start = time.Now()
	e.Node, err = node.Start(ctx, c, node.Options{BinDir: opts.BinDir, Dir: filepath.Join(opts.Dir, "node"),
		Images: images, SandboxImage: nodeimages.SandboxImage()})
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("start real node: %w", err)
	}
	e.NodeWait = e.Node.LockWait()
	e.NodeUp = time.Since(start) - e.NodeWait
	return e, nil
}

// Stop stops the node (its pods with it) and the control plane.
func (e *Env) Stop() {
	e.Node.Stop()
	e.Cluster.Stop()
}

// Kubectl runs kubectl against the cluster and returns stdout and stderr.
func (e *Env) Kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	return e.Cluster.Kubectl(ctx, stdin, args...)
}

// Helm runs BinDir/helm against the cluster, its cache, configuration and
// data in Dir/helm, and returns its combined output.
func (e *Env) Helm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.opts.BinDir, "helm"), append(args, "--kubeconfig", e.Cluster.Kubeconfig())...)
	home := filepath.Join(e.opts.Dir, "helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
