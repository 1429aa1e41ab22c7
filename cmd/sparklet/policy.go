//go:build !sidecaronly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/check"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

func newPolicyCmd(a *app) *cobra.Command {
	cmd := groupCmd("policy", "Work with the sparklet policy")
	cmd.AddCommand(newPolicyValidateCmd(a))
	return cmd
}

func newPolicyValidateCmd(a *app) *cobra.Command {
	var (
		kube      kubeFlags
		dryRun    bool
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check policy files as the webhook loads them",
		Long: "validate decodes and checks each policy file exactly as the webhook does when\n" +
			"it loads or reloads its policy, and prints every problem with its field.\n" +
			"- reads standard input. With --server-dry-run, the pod settings of each\n" +
			"section are also sent to the cluster's API server as a dry run, so that its\n" +
			"own validation and admission (priority classes, service accounts, Pod\n" +
			"Security) judge them; nothing is stored.\n\n" +
			"Exit codes: 0 every file is valid; 1 a file is invalid; 2 a file could not\n" +
			"be read, or the command line is wrong.",
		Example: "  sparklet policy validate examples/policy.yaml\n" +
			"  helm template sparklet charts/sparklet | yq 'select(.kind == \"ConfigMap\") | .data[\"policy.yaml\"]' | sparklet policy validate -",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("a policy file is required: %s FILE... (- for standard input)", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			var client kubernetes.Interface
			if dryRun {
				c, ctxNS, err := kube.client()
				if err != nil {
					return exitError{exitUsage, fmt.Errorf("--server-dry-run: %w", err)}
				}
				client = c
				if !cmd.Flags().Changed("namespace") {
					namespace = ctxNS
				}
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			invalid := 0
			for _, file := range files {
				valid, err := validatePolicyFile(ctx, a, client, namespace, file)
				if err != nil {
					return err
				}
				if !valid {
					invalid++
				}
			}
			if invalid > 0 {
				return exitError{exitFailure, fmt.Errorf("%d of %d policy files invalid", invalid, len(files))}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&dryRun, "server-dry-run", false, "also send each section's pod settings to the API server as a dry run")
	fs.StringVarP(&namespace, "namespace", "n", "", "with --server-dry-run: the namespace for the cluster-wide sections (default: the kubeconfig context's)")
	kube.register(fs)
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

// validatePolicyFile validates one policy file and prints the verdict;
// with a client, its sections' pod settings also go to the API server as a
// dry run, in namespace for the cluster-wide ones. The error is for a file
// it could not read or a dry run it could not make.
func validatePolicyFile(ctx context.Context, a *app, client kubernetes.Interface, namespace, file string) (bool, error) {
	data, err := readFileOrStdin(file, a.stdin)
	if err != nil {
		return false, exitError{exitUsage, err}
	}
	p, err := policy.Parse(data, version.Version)
	if err != nil {
		fmt.Fprintf(a.stdout, "%s: invalid\n%s\n", file, indentProblems(err))
		return false, nil
	}
	if client != nil {
		problems, notes, err := check.DryRunPolicy(ctx, client, p, namespace)
		if err != nil {
			return false, exitError{exitUsage, fmt.Errorf("%s: %w", file, err)}
		}
		for _, n := range notes {
			fmt.Fprintf(a.stderr, "%s: note: %s\n", file, n)
		}
		if len(problems) > 0 {
			fmt.Fprintf(a.stdout, "%s: invalid\n%s\n", file, indentProblems(&policy.Error{Problems: problems}))
			return false, nil
		}
	}
	fmt.Fprintf(a.stdout, "%s: valid\n", file)
	return true, nil
}

func readFileOrStdin(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// indentProblems lists a policy error's problems one per line.
func indentProblems(err error) string {
	var b strings.Builder
	for i, p := range policy.Problems(err) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("  - " + p)
	}
	return b.String()
}
