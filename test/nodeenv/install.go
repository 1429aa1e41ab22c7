package nodeenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Release and ReleaseNamespace are docs/install.md's: `helm install
// sparklet charts/sparklet --namespace sparklet-system`.
const (
	Release          = "sparklet"
	ReleaseNamespace = "sparklet-system"
	// Deployment is the webhook's Deployment in ReleaseNamespace.
	Deployment = Release + "-sparklet"
)

// Install is what InstallChart installs.
type Install struct {
	// Chart is the chart's directory, as the commands show it
	// (charts/sparklet).
	Chart string
	// PolicyFile, when set, is the chart's policy value (a values file
	// written next to the state); empty keeps the chart's default policy.
	PolicyFile string
	// Namespaces are created, listed in namespaces.list (so the chart
	// makes their driver ServiceAccount) and labelled
	// sparklet.io/inject=enabled.
	Namespaces []string
}

// InstallChart installs the chart as docs/install.md tells, in its
// self-managed TLS mode, and waits for the webhook's rollout. show, when not
// nil, gets each command as a user would type it and its output.
func (e *Env) InstallChart(ctx context.Context, in Install, show func(command, output string)) error {
	if show == nil {
		show = func(string, string) {}
	}
	kubectl := func(args ...string) error {
		out, errOut, err := e.Kubectl(ctx, nil, args...)
		show("kubectl "+strings.Join(args, " "), out+errOut)
		if err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut)
		}
		return nil
	}
	for _, ns := range in.Namespaces {
		if err := kubectl("create", "namespace", ns); err != nil {
			return err
		}
	}
	args := []string{"install", Release, in.Chart, "--namespace", ReleaseNamespace, "--create-namespace",
		"--set", "tls.certManager.enabled=false", "--set", "namespaces.list={" + strings.Join(in.Namespaces, ",") + "}"}
	if in.PolicyFile != "" {
		values, err := policyValues(in.PolicyFile, e.opts.Dir)
		if err != nil {
			return err
		}
		args = append(args, "--values", values)
	}
	out, err := e.Helm(ctx, args...)
	show("helm "+strings.Join(args, " "), out)
	if err != nil {
		return err
	}
	for _, ns := range in.Namespaces {
		if err := kubectl("label", "namespace", ns, "sparklet.io/inject=enabled"); err != nil {
			return err
		}
	}
	return kubectl("rollout", "status", "deployment/"+Deployment, "--namespace", ReleaseNamespace, "--timeout=4m")
}

// policyValues writes a values file whose policy is the policy file's
// document, and returns its path.
func policyValues(policyFile, dir string) (string, error) {
	policy, err := os.ReadFile(policyFile)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# " + policyFile + " as the chart's policy\npolicy:\n")
	for _, line := range strings.SplitAfter(string(policy), "\n") {
		if strings.TrimSpace(line) != "" {
			line = "  " + line
		}
		b.WriteString(line)
	}
	path := filepath.Join(dir, "policy-values.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
