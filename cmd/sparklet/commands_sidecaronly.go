//go:build sidecaronly

package main

import "github.com/spf13/cobra"

// commands are the subcommands of the sparklet-sidecar binary, built with
// -tags sidecaronly: the sidecar alone, without the packages (and the
// client-go API groups) the other subcommands link, so the process each
// driver pod runs stays small.
func commands(a *app) []*cobra.Command {
	return []*cobra.Command{newSidecarCmd(a), newVersionCmd(a)}
}

// handOver does nothing: this is the binary the full one hands over to.
func handOver(*app) {}
