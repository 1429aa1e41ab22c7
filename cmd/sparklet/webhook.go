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
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/webhook"
	"github.com/sparklet/sparklet/webhook/selfcert"
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
	mode := fs.String("cert-mode", "files", "files: --tls-cert-file and --tls-key-file (cert-manager); self: manage a CA and certificate in a Secret")
	var self selfcert.Config
	fs.StringVar(&self.Namespace, "cert-namespace", os.Getenv("POD_NAMESPACE"), "self mode: namespace of the Secret and Lease (env POD_NAMESPACE)")
	fs.StringVar(&self.SecretName, "cert-secret", "sparklet-webhook-certs", "self mode: the Secret holding the CA and serving certificate")
	fs.StringVar(&self.ServiceName, "service-name", "sparklet", "self mode: the webhook's Service, whose DNS names the certificate covers")
	fs.StringVar(&self.WebhookConfigName, "webhook-config-name", "sparklet", "self mode: the MutatingWebhookConfiguration whose caBundle to keep")
	extraSANs := fs.String("cert-extra-sans", "", "self mode: more comma-separated DNS names or IPs for the certificate")
	fs.BoolVar(&self.LeaderElection, "leader-election", true, "self mode: only the Lease holder writes the Secret and the caBundle")
	kubeconfig := fs.String("kubeconfig", "", "self mode: kubeconfig outside a pod (default: in-cluster)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, "webhook")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *mode {
	case "files":
	case "self":
		if self.Namespace == "" {
			return errors.New("--cert-namespace (or env POD_NAMESPACE) is required with --cert-mode=self")
		}
		if *extraSANs != "" {
			self.ExtraSANs = strings.Split(*extraSANs, ",")
		}
		client, err := kubeClient(*kubeconfig)
		if err != nil {
			return err
		}
		m := selfcert.New(self, client, log.WithField("component", "selfcert"))
		if err := m.Start(ctx); err != nil {
			return err
		}
		cfg.Certs = m
	default:
		return fmt.Errorf("--cert-mode must be files or self, got %q", *mode)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return webhook.NewServer(cfg, log).Run(ctx)
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
