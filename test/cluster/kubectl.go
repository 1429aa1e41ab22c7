package cluster

import (
	"bytes"
	"context"
	"os/exec"
)

// Kubectl runs kubectl against the cluster, with stdin when it is not nil,
// and returns stdout and stderr.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
}
