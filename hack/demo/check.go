package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// sparkletCheck runs `sparklet check` against the demo's control plane and
// prints its answer as kubectl's are printed. The pod runner's webhook
// reads examples/policy.yaml, not a ConfigMap, so there --policy names it;
// on the real node check reads the installed chart's policy.
func sparkletCheck(ctx context.Context, s *stage, bin string, args ...string) {
	args = append(args, s.checkArgs...)
	full := append(append([]string{"check"}, args...), "--kubeconfig", s.kubeconfig)
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "sparklet"), full...).CombinedOutput()
	if err != nil {
		out = append(out, fmt.Sprintf("(sparklet check: %v)", err)...)
	}
	showCommand("sparklet check "+strings.Join(args, " "), string(out))
}
