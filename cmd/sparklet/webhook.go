package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var err error
			if cfg.Certs, err = certs.certSource(ctx, a.log); err != nil {
				return err
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

// restConfig reads the kubeconfig when given, else the pod's service account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else if rc, err = rest.InClusterConfig(); err == rest.ErrNotInCluster {
		err = errors.New("not in a pod: pass --kubeconfig")
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes credentials: %w", err)
	}
	return rc, nil
}
