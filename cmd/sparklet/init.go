//go:build !sidecaronly

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/fetch"
	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/vocab"
)

func newInitCmd(a *app) *cobra.Command {
	cfg := fetch.Config{}
	var termLog string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Fetch the driver pod's remote dependencies (the sparklet-init container)",
		Long:  "The fetch policy comes from env " + vocab.EnvFetchPolicy + ", as JSON (unset: the defaults).",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg.Log = a.log
			return runInit(cfg, termLog)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.AnnotationFile, "annotation-file", "", "the file the downward API projects the pod's "+vocab.AnnotationFetch+" annotation into (required)")
	fs.StringVar(&cfg.Dest, "dest", spec.MountPath, "the directory the files land in")
	fs.IntVar(&cfg.Retries, "retries", fetch.DefaultRetries, "failed attempts in a row allowed per file after the first")
	fs.DurationVar(&cfg.Backoff, "backoff", fetch.DefaultBackoff, "first retry delay; it doubles each time")
	fs.DurationVar(&cfg.MaxBackoff, "max-backoff", fetch.DefaultMaxBackoff, "longest retry delay")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", fetch.DefaultProgressEvery, "how often a running download logs its progress")
	fs.StringVar(&termLog, "termination-log", "/dev/termination-log", "where the failure line goes for kubectl describe; skipped if unwritable")
	return cmd
}

// runInit is the sparklet-init container: it fetches the pod's remote
// dependencies before the driver starts, under the fetch policy the webhook
// put in its env as JSON. A failure is one line, also written to the
// termination log, which `kubectl describe pod` shows.
func runInit(cfg fetch.Config, termLog string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	cfg.Policy, err = spec.DecodePolicy(os.Getenv(vocab.EnvFetchPolicy))
	if err != nil {
		err = fmt.Errorf("%s: %w", vocab.EnvFetchPolicy, err)
	} else {
		err = fetch.Run(ctx, cfg)
	}
	if err != nil {
		_ = fetch.WriteTerminationMessage(termLog, err)
		return errors.New(fetch.OneLine(err))
	}
	return nil
}
