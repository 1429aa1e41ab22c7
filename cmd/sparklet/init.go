package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sparklet/sparklet/fetch"
	"github.com/sparklet/sparklet/fetch/spec"
)

// runInit is the sparklet-init container: it fetches the pod's remote
// dependencies before the driver starts, under the fetch policy the webhook
// put in its env as JSON. A failure is one line, also written to the
// termination log, which `kubectl describe pod` shows.
func runInit(args []string) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	cfg := fetch.Config{}
	fs.StringVar(&cfg.AnnotationFile, "annotation-file", "", "the file the downward API projects the pod's "+spec.Annotation+" annotation into (required)")
	fs.StringVar(&cfg.Dest, "dest", spec.MountPath, "the directory the files land in")
	fs.IntVar(&cfg.Retries, "retries", fetch.DefaultRetries, "failed attempts in a row allowed per file after the first")
	fs.DurationVar(&cfg.Backoff, "backoff", fetch.DefaultBackoff, "first retry delay; it doubles each time")
	fs.DurationVar(&cfg.MaxBackoff, "max-backoff", fetch.DefaultMaxBackoff, "longest retry delay")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", fetch.DefaultProgressEvery, "how often a running download logs its progress")
	termLog := fs.String("termination-log", "/dev/termination-log", "where the failure line goes for kubectl describe; skipped if unwritable")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sparklet init [flags]\n\nThe fetch policy comes from env %s, as JSON (unset: the defaults).\n\n", spec.PolicyEnv)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New("unexpected arguments: " + strings.Join(fs.Args(), " "))
	}
	log, err := newLogger(*logLevel, "init")
	if err != nil {
		return err
	}
	cfg.Log = log
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Policy, err = spec.DecodePolicy(os.Getenv(spec.PolicyEnv))
	if err != nil {
		err = fmt.Errorf("%s: %w", spec.PolicyEnv, err)
	} else {
		err = fetch.Run(ctx, cfg)
	}
	if err != nil {
		_ = fetch.WriteTerminationMessage(*termLog, err)
		return errors.New(fetch.OneLine(err))
	}
	return nil
}
