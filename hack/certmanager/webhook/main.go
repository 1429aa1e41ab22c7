// Command cert-manager-webhook runs cert-manager's own webhook (its
// defaulting and validation of cert-manager's resources, and the
// requester's identity and approval checks on a CertificateRequest) as
// cert-manager's cmd/webhook does (cert-manager v1.21,
// cmd/webhook/app/webhook.go: the configuration's defaults, its flags,
// then internal/webhook.NewCertManagerWebhookServer run until a signal),
// without a --config file.
//
// The server and its admission plugins are in cert-manager's internal
// packages, which Go lets only packages under
// github.com/cert-manager/cert-manager/ import; cert-manager's cmd/webhook
// is such a module of its own, which the module proxy does not serve. So
// this module's path sits under that prefix, as cmd/webhook's does, and
// requires the released root module.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
	"github.com/cert-manager/cert-manager/pkg/webhook/options"
)

func main() {
	logf.InitLogs()
	defer logf.FlushLogs()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-webhook:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := options.NewWebhookConfiguration()
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("cert-manager-webhook", pflag.ContinueOnError)
	options.AddConfigFlags(fs, cfg)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	if err := logf.ValidateAndApply(&cfg.Logging); err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := logf.Log.WithName("webhook")
	srv, err := cmwebhook.NewCertManagerWebhookServer(log, *cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
