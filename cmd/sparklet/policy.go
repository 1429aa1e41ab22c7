package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

func newPolicyCmd(a *app) *cobra.Command {
	cmd := groupCmd("policy", "Work with the sparklet policy")
	cmd.AddCommand(newPolicyValidateCmd(a))
	return cmd
}

func newPolicyValidateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check policy files as the webhook loads them",
		Long: "validate decodes and checks each policy file exactly as the webhook does when\n" +
			"it loads or reloads its policy, and prints every problem with its field.\n" +
			"- reads standard input.\n\n" +
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
		RunE: func(_ *cobra.Command, files []string) error {
			invalid := 0
			for _, file := range files {
				data, err := readFileOrStdin(file, a.stdin)
				if err != nil {
					return exitError{exitUsage, err}
				}
				if _, err := policy.Parse(data, version.Version); err != nil {
					invalid++
					fmt.Fprintf(a.stdout, "%s: invalid\n%s\n", file, indentProblems(err))
					continue
				}
				fmt.Fprintf(a.stdout, "%s: valid\n", file)
			}
			if invalid > 0 {
				return exitError{exitFailure, fmt.Errorf("%d of %d policy files invalid", invalid, len(files))}
			}
			return nil
		},
	}
	_ = cmd.MarkFlagFilename("", "yaml", "yml")
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
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
