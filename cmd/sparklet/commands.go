//go:build !sidecaronly

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// commands are the subcommands of the sparklet binary.
func commands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newWebhookCmd(a), newSidecarCmd(a), newInitCmd(a),
		newInjectCmd(a), newPolicyCmd(a), newCheckCmd(a), newHistorySyncCmd(a), newVersionCmd(a),
	}
}

// groupCmd is a command that only holds subcommands: alone it prints its
// help, with an argument it names the unknown subcommand.
func groupCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		},
	}
}
