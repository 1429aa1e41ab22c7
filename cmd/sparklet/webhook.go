package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sparklet/sparklet/webhook"
)

func runWebhook(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	var cfg webhook.Config
	fs.StringVar(&cfg.Listen, "listen", ":8443", "HTTPS address for /mutate-pods, /healthz, /readyz and /metrics")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM), reloaded when it changes")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key-file", "", "serving key (PEM), reloaded when it changes")
	fs.StringVar(&cfg.PolicyFile, "policy", "", "policy YAML, reloaded when it changes (default: the built-in policy)")
	fs.DurationVar(&cfg.ReloadInterval, "reload-interval", 10*time.Second, "how often to check the certificate and policy files")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, "webhook")
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return webhook.NewServer(cfg, log).Run(ctx)
}
