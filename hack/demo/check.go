package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	testenv "github.com/sparklet/sparklet/test/env"
)

// sparkletCheck runs `sparklet check` against the demo's control plane and
// prints its answer as kubectl's are printed. The demo's webhook reads
// examples/policy.yaml, not the chart's ConfigMap, so --policy names it.
func sparkletCheck(ctx context.Context, env *testenv.Env, bin string, args ...string) {
	fmt.Printf("    $ sparklet check %s --policy examples/policy.yaml\n", strings.Join(args, " "))
	full := append(append([]string{"check"}, args...), "--policy", "examples/policy.yaml", "--kubeconfig", env.Cluster.Kubeconfig())
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "sparklet"), full...).CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Printf("      %s\n", line)
	}
	if err != nil {
		fmt.Printf("      (sparklet check: %v)\n", err)
	}
}
