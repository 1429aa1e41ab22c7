package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerdConfig is containerd's configuration (version 3): its root,
// state and sockets in the node's directory; the CRI plugin with CNI from
// Debian's plugins, the pause image built here pinned, pod network
// namespaces under its state directory, and every registry pointed at a
// closed loopback port so that a missing image fails at once instead of
// being pulled.
//
// restrict_oom_score_adj: root on these machines lacks CAP_SYS_RESOURCE, so
// runc cannot give a sandbox the -998 the kubelet asks for ("can't get
// final child's PID from pipe: EOF"); containerd clamps it to its own.
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = %[4]q

[plugins."io.containerd.cri.v1.images"]
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %[6]q
`

// noRegistry answers every registry with a loopback port nothing listens on.
const noRegistry = `server = "http://127.0.0.1:9"

[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
`

// cniConfig is the pods' network: a bridge with the node as gateway, and
// routes only to the Service range and the host end of the veth pair.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "sparklet-node",
  "plugins": [{
    "type": "bridge",
    "bridge": %[1]q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %[2]q}]],
      "routes": [{"dst": %[3]q}, {"dst": %[4]q}],
      "dataDir": %[5]q
    }
  }]
}
`

func (n *Node) socket() string { return n.path("containerd", "containerd.sock") }

func (n *Node) startContainerd(ctx context.Context) error {
	registries := n.path("containerd", "certs.d", "_default")
	if err := os.MkdirAll(registries, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		filepath.Join(registries, "hosts.toml"): noRegistry,
		n.path("containerd", "config.toml"): fmt.Sprintf(containerdConfig,
			n.path("containerd", "root"), n.path("containerd", "state"), n.socket(),
			n.path("cni"), n.opts.SandboxImage, n.path("containerd", "certs.d")),
		n.path("cni", "10-sparklet.conflist"): fmt.Sprintf(cniConfig,
			bridge, PodCIDR, ServiceCIDR, HostIP+"/32", n.path("cni-ipam")),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := n.run("containerd", "--config", n.path("containerd", "config.toml")); err != nil {
		return err
	}
	return n.waitFor(ctx, "containerd", time.Minute, func(ctx context.Context) (bool, error) {
		return n.ctr(ctx, "version") == nil, nil
	})
}

// ctr runs containerd's client on the node's socket in the namespace the
// CRI plugin uses.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(n.opts.BinDir, "ctr"),
		append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// importImages loads the image tarballs into the CRI plugin's namespace,
// unpacked for the overlayfs snapshotter the CRI plugin runs them with.
func (n *Node) importImages(ctx context.Context) error {
	for _, tarball := range n.opts.Images {
		if err := n.ctr(ctx, "images", "import", "--snapshotter", "overlayfs", tarball); err != nil {
			return fmt.Errorf("import %s: %w", tarball, err)
		}
	}
	return nil
}
