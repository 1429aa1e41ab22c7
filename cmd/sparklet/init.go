package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/sparklet/sparklet/fetch"
)

// runInit is the sparklet-init container: it fetches the pod's remote
// dependencies before the driver starts. A failure is one line, also
// written to the termination log, which `kubectl describe pod` shows.
func runInit(args []string) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	cfg := fetch.Config{}
	fs.StringVar(&cfg.AnnotationFile, "annotation-file", "/etc/sparklet/podinfo/fetch", "the pod's "+fetch.Annotation+" annotation, from the downward API")
	fs.StringVar(&cfg.Dest, "dest", fetch.MountPath, "where the files land")
	policies := fs.String("policies", "", "the fetch policies in force, JSON (set by the webhook)")
	fs.IntVar(&cfg.Retries, "retries", 4, "retries per file, with exponential backoff from 1s")
	termLog := fs.String("termination-log", "/dev/termination-log", "where the failure line goes for kubectl describe")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, "init")
	if err != nil {
		return err
	}
	if cfg.Policies, err = fetch.ParsePolicies(*policies); err != nil {
		return err
	}
	if cfg.Dest == "" {
		return errors.New("--dest is required")
	}
	cfg.Log = log
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fetch.Run(ctx, cfg); err != nil {
		_ = os.WriteFile(*termLog, []byte(err.Error()+"\n"), 0o644)
		return err
	}
	log.Info("all dependencies fetched")
	return nil
}
