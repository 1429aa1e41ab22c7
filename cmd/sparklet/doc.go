// Command sparklet is the one sparklet binary, a subcommand for each part.
// It is the admission webhook, the driver-pod sidecar, the dependency init
// container, the offline injector and the tools around them (policy
// validate, check, version).
//
// The command line follows kubectl's habits with spf13/cobra and
// spf13/pflag: -h exits 0, unknown flags and stray arguments are errors
// (exit 2), and a failure is one "Error: ..." line (exit 1).
package main
