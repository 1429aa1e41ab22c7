// Command sparklet is the one sparklet binary, a subcommand for each part.
// It is the admission webhook, the driver-pod sidecar, the dependency init
// container and the offline injector.
package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// commands maps a subcommand to its entry point. Each entry point parses its
// own flags into one validated config and wires the packages together.
var commands = map[string]func(args []string) error{
	"webhook": runWebhook,
	"sidecar": runSidecar,
	"init":    runInit,
	"inject":  runInject,
	"version": runVersion,
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(2)
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "sparklet: unknown command %q\n\n%s", os.Args[1], usage())
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "sparklet %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() string {
	return "usage: sparklet <command> [flags]\n\ncommands: " + strings.Join(slices.Sorted(maps.Keys(commands)), ", ") +
		"\nrun 'sparklet <command> -h' for a command's flags\n"
}
