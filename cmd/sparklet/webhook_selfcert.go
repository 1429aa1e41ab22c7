//go:build !sidecaronly

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sparklet/sparklet/webhook"
	"github.com/sparklet/sparklet/webhook/selfcert"
)

// certFlags choose where `sparklet webhook` gets its serving certificate:
// mode files reads --tls-cert-file/--tls-key-file (cert-manager, or a
// Secret you manage); mode self keeps a CA and certificate in a Secret and
// patches the CA into the webhook configuration (webhook/selfcert).
type certFlags struct {
	mode       string
	self       selfcert.Config
	extraSANs  string
	kubeconfig string
	fs         *pflag.FlagSet
	// reaping is --reap-kept-executors, which reads --kubeconfig too.
	reaping bool
}

// selfOnlyFlags mean nothing in files mode; naming one there is a mistake
// the user should hear about, not a setting silently ignored.
var selfOnlyFlags = []string{"cert-namespace", "cert-secret", "service-name", "webhook-config-name",
	"cert-extra-sans", "cert-validity", "cert-check-interval", "leader-election", "kubeconfig"}

func (f *certFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.mode, "cert-mode", "files", "files: --tls-cert-file and --tls-key-file (cert-manager); self: manage a CA and certificate in a Secret")
	fs.StringVar(&f.self.Namespace, "cert-namespace", os.Getenv("POD_NAMESPACE"), "self mode: namespace of the Secret and Lease (env POD_NAMESPACE)")
	fs.StringVar(&f.self.SecretName, "cert-secret", "sparklet-webhook-certs", "self mode: the Secret holding the CA and serving certificate")
	fs.StringVar(&f.self.ServiceName, "service-name", "sparklet", "self mode: the webhook's Service, whose DNS names the certificate covers")
	fs.StringVar(&f.self.WebhookConfigName, "webhook-config-name", "sparklet", "self mode: the MutatingWebhookConfiguration whose caBundle to keep")
	fs.StringVar(&f.extraSANs, "cert-extra-sans", "", "self mode: more comma-separated DNS names or IPs for the certificate, e.g. 127.0.0.1")
	fs.DurationVar(&f.self.ServingValidity, "cert-validity", 90*24*time.Hour, "self mode: serving certificate lifetime; renewed when a third is left, the CA lives ten times as long")
	fs.DurationVar(&f.self.Interval, "cert-check-interval", time.Minute, "self mode: how often the Secret is checked and reloaded")
	fs.BoolVar(&f.self.LeaderElection, "leader-election", true, "self mode: only the holder of the Lease <cert-secret>-writer writes the Secret and the caBundle")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "self mode and --reap-kept-executors: kubeconfig outside a pod (default: in-cluster)")
}

// validate checks the flags and fills in the extra SANs.
func (f *certFlags) validate() error {
	switch f.mode {
	case "files":
		for _, name := range selfOnlyFlags {
			if f.fs == nil || !f.fs.Changed(name) {
				continue
			}
			if name == "kubeconfig" {
				if f.reaping {
					continue
				}
				return errors.New("--kubeconfig applies only with --cert-mode=self or --reap-kept-executors; add one or drop --kubeconfig")
			}
			return fmt.Errorf("--%s applies only with --cert-mode=self; add --cert-mode=self or drop --%s (files mode reads --tls-cert-file and --tls-key-file)", name, name)
		}
		return nil
	case "self":
	default:
		return fmt.Errorf("--cert-mode must be files or self, got %q", f.mode)
	}
	if f.self.Namespace == "" {
		return fmt.Errorf("--cert-namespace (or env POD_NAMESPACE) is required with --cert-mode=self")
	}
	for flagName, v := range map[string]string{"--cert-secret": f.self.SecretName, "--webhook-config-name": f.self.WebhookConfigName} {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return fmt.Errorf("%s %q is not a valid object name: %s", flagName, v, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1035Label(f.self.ServiceName); len(errs) > 0 {
		return fmt.Errorf("--service-name %q is not a valid Service name: %s", f.self.ServiceName, strings.Join(errs, "; "))
	}
	if f.self.ServingValidity < time.Hour {
		return fmt.Errorf("--cert-validity must be at least 1h, got %s", f.self.ServingValidity)
	}
	if f.self.Interval <= 0 || f.self.Interval > f.self.ServingValidity/3 {
		return fmt.Errorf("--cert-check-interval must be positive and under a third of --cert-validity, got %s", f.self.Interval)
	}
	f.self.ExtraSANs = nil
	for _, san := range strings.Split(f.extraSANs, ",") {
		san = strings.TrimSpace(san)
		if san == "" {
			continue
		}
		if net.ParseIP(san) == nil {
			if errs := validation.IsDNS1123Subdomain(san); len(errs) > 0 {
				return fmt.Errorf("--cert-extra-sans: %q is neither an IP nor a DNS name: %s", san, strings.Join(errs, "; "))
			}
		}
		f.self.ExtraSANs = append(f.self.ExtraSANs, san)
	}
	return nil
}

// certSource returns the started self-managed source, or nil in files mode
// (the server then reads the files itself).
func (f *certFlags) certSource(ctx context.Context, log *logrus.Entry) (webhook.CertSource, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if f.mode == "files" {
		return nil, nil
	}
	client, err := kubeClient(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	m := selfcert.New(f.self, client, log.WithField("component", "selfcert"))
	if err := m.Start(ctx); err != nil {
		return nil, fmt.Errorf("self-managed certificate: %w", err)
	}
	return m, nil
}
