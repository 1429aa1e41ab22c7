//go:build !sidecaronly

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/internal/gcpercent"
	"github.com/sparklet/sparklet/vocab"
	"github.com/sparklet/sparklet/webhook"
)

func newWebhookCmd(a *app) *cobra.Command {
	var cfg webhook.Config
	var certs certFlags
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Run the mutating admission webhook that injects driver pods",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			gcpercent.Set(webhook.GCPercent, os.LookupEnv)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var err error
			certs.reaping = cfg.ReapKeptExecutors
			if cfg.Certs, err = certs.certSource(ctx, a.log); err != nil {
				return err
			}
			if cfg.ReapKeptExecutors {
				if cfg.Client, err = kubeClient(certs.kubeconfig); err != nil {
					return fmt.Errorf("--reap-kept-executors: %w", err)
				}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			return webhook.NewServer(cfg, a.log).Run(ctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Listen, "listen", ":8443", "HTTPS address for /mutate-pods, /healthz, /readyz and /metrics")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM), reloaded when it changes")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key-file", "", "serving key (PEM), reloaded when it changes")
	fs.StringVar(&cfg.PolicyFile, "policy", "", "policy YAML, reloaded when it changes (default: the built-in policy)")
	fs.DurationVar(&cfg.ReloadInterval, "reload-interval", 10*time.Second, "how often to check the certificate and policy files")
	fs.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the HTTPS port")
	fs.BoolVar(&cfg.ReapKeptExecutors, "reap-kept-executors", false,
		"delete executor pods labelled "+vocab.LabelKeptUntil+" once the time it holds has passed, also after their driver ended (needs list, watch and delete on pods)")
	fs.StringSliceVar(&cfg.ReapNamespaces, "reap-namespaces", nil, "with --reap-kept-executors: only these namespaces, comma-separated (default: all)")
	certs.register(fs)
	return cmd
}

// kubeClient uses the kubeconfig when given, else the pod's service account.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}
