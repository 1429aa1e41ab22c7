package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sparklet/sparklet/hack/nodeimages"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/metricsserver"
	"github.com/sparklet/sparklet/test/node"
)

var (
	binDir string
	cp     *cluster.Cluster
	nd     *node.Node
	ms     *metricsserver.MetricsServer
)

func TestMain(m *testing.M) {
	if !e2egate.NodeRuns() {
		fmt.Println("e2e/node: skipped; set SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test does)")
		return
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binDir = os.Getenv("SPARKLET_BIN_DIR")
	dir, err := os.MkdirTemp("", "sparklet-e2e-node-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	images, err := nodeimages.Tarballs(binDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e/node: %v\n", err)
		return 1
	}
	start := time.Now()
	cp, err = cluster.Start(ctx, node.ClusterOptions(cluster.Options{BinDir: binDir, Dir: filepath.Join(dir, "cluster")}))
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e/node: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	cpUp := time.Now()
	nd, err = node.Start(ctx, cp, node.Options{BinDir: binDir, Dir: filepath.Join(dir, "node"), Images: images, SandboxImage: nodeimages.SandboxImage()})
	if err != nil {
		cp.Stop()
		fmt.Fprintf(os.Stderr, "e2e/node: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	nodeUp := time.Now()
	// metrics-server, as a cluster runs it for the executor resize: the
	// API server serves metrics.k8s.io from it, scraped from the kubelet.
	// Its own time: node.Start may have spent ctx's waiting for the lock.
	msCtx, msCancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer msCancel()
	ms, err = metricsserver.Start(msCtx, metricsserver.Options{BinDir: binDir, Dir: filepath.Join(dir, "metrics-server"),
		Cluster: cp, Host: node.HostIP, Node: node.Name})
	if err != nil {
		nd.Stop()
		cp.Stop()
		fmt.Fprintf(os.Stderr, "e2e/node: %v\nlogs are in %s\n", err, dir)
		return 1
	}
	fmt.Printf("e2e/node: control plane up in %s, the node (its lock, images imported, Ready) %s later, metrics-server %s later\n",
		cpUp.Sub(start).Round(100*time.Millisecond), nodeUp.Sub(cpUp).Round(100*time.Millisecond), time.Since(nodeUp).Round(100*time.Millisecond))
	code := m.Run()
	ms.Stop()
	nd.Stop()
	cp.Stop()
	if code == 0 && os.Getenv("SPARKLET_KEEP") == "" {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e/node: logs of the control plane, the node and its pods kept in %s\n", dir)
	}
	return code
}
