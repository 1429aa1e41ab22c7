package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// app is what every subcommand shares: the standard streams and the logger
// the root's --log-level sets up before the subcommand runs.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	logLevel       string
	log            *logrus.Entry
	args           []string // the command line, less the program's name
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (or found the input invalid)
	exitUsage   = 2 // bad flags, arguments or command name
)

// usageError is a mistake on the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// newRootCmd builds the command tree.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "sparklet",
		Short: "Run plain Kubernetes pods as Spark drivers",
		Long: "sparklet turns a pod labelled spark-role=driver into a client-mode Spark driver.\n" +
			"The webhook injects it, the sidecar serves the driver's executors, and\n" +
			"inject, check and policy validate show what it does before it does it.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// The component is the subcommand: webhook, sidecar, policy-validate...
			component := strings.ReplaceAll(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), " ", "-")
			log, err := newLogger(a.stderr, a.logLevel, component)
			if err != nil {
				return usageError{err}
			}
			a.log = log
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "debug, info, warn or error; logs are JSON on standard error")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(commands(a)...)
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: %q takes no arguments", args[0], cmd.CommandPath())}
	}
	return nil
}

// execute runs the command line and returns the exit code. Errors go to
// standard error as one "Error: ..." line, with a pointer to the help for
// usage errors, as kubectl prints them.
func execute(a *app, args []string) int {
	cmd, err := a.run(args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(a.stderr, "Error: %v\n", err)
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(a.stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	}
	return exitFailure
}

// run runs the command line and returns the command it ran and its error.
func (a *app) run(args []string) (*cobra.Command, error) {
	a.args = args
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteC()
	if cmd == nil {
		cmd = root
	}
	return cmd, err
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
