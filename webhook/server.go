package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/internal/certfiles"
	"github.com/sparklet/sparklet/internal/profiling"
)

// Config is the webhook's whole configuration; the flags of
// `sparklet webhook` bind straight to it.
type Config struct {
	Listen         string
	TLSCertFile    string
	TLSKeyFile     string
	PolicyFile     string
	ReloadInterval time.Duration
	// Certs, when set, replaces the certificate files (self-managed mode).
	Certs CertSource
	// Profiling serves /debug/pprof/ on the HTTPS port (--profiling).
	Profiling bool
	// ReapKeptExecutors deletes the failed executors that drivers'
	// sidecars keep for their logs once their window ends, also after
	// their driver ended (--reap-kept-executors, keptreaper.go), in
	// ReapNamespaces (all when empty) through Client.
	ReapKeptExecutors bool
	ReapNamespaces    []string
	Client            kubernetes.Interface
}

// Validate names the flag at fault.
func (c *Config) Validate() error {
	if c.Listen == "" {
		return errors.New("--listen is required")
	}
	if c.Certs == nil && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file are both required (or --cert-mode=self)")
	}
	if c.ReloadInterval <= 0 {
		return fmt.Errorf("--reload-interval must be positive, got %s", c.ReloadInterval)
	}
	if len(c.ReapNamespaces) > 0 && !c.ReapKeptExecutors {
		return errors.New("--reap-namespaces applies only with --reap-kept-executors; add it or drop --reap-namespaces")
	}
	for _, ns := range c.ReapNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--reap-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if c.ReapKeptExecutors && c.Client == nil {
		return errors.New("--reap-kept-executors needs a Kubernetes client (in a pod, its service account's token; outside, --kubeconfig)")
	}
	return nil
}

// Server is the webhook's HTTPS server.
type Server struct {
	cfg      Config
	log      *logrus.Entry
	metrics  *metrics
	policies *policyStore
	certs    CertSource
	reaper   *keptReaper
}

// NewServer builds a server from a validated config.
func NewServer(cfg Config, log *logrus.Entry) *Server {
	m := newMetrics()
	s := &Server{cfg: cfg, log: log, metrics: m, certs: cfg.Certs,
		policies: &policyStore{metrics: m, log: log}}
	m.registry.MustRegister(newCertExpiry(func() CertSource { return s.certs }))
	if cfg.ReapKeptExecutors {
		s.reaper = newKeptReaper(cfg.Client, cfg.ReapNamespaces, newReaperMetrics(m.registry), log.WithField("component", "keptreaper"))
	}
	return s
}

// MutatePath is where the webhook answers AdmissionReviews.
const MutatePath = "/mutate-pods"

// Handler returns the HTTP routes: /mutate-pods, /healthz, /readyz, /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(MutatePath, &Handler{policy: s.policies.get, metrics: s.metrics, log: s.log})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case s.certs == nil || !s.certs.Loaded():
			http.Error(w, "no serving certificate loaded", http.StatusServiceUnavailable)
		case s.policies.get() == nil:
			http.Error(w, s.policies.notReady(), http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		profiling.Register(mux)
	}
	return mux
}

// Run loads the policy and certificate, serves until ctx ends, then shuts
// down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.policies.watch(ctx, s.cfg.PolicyFile, s.cfg.ReloadInterval); err != nil {
		return err
	}
	if s.certs == nil {
		fc := &certfiles.Source{CertFile: s.cfg.TLSCertFile, KeyFile: s.cfg.TLSKeyFile, Interval: s.cfg.ReloadInterval, Log: s.log}
		if err := fc.Start(ctx); err != nil {
			return fmt.Errorf("load --tls-cert-file and --tls-key-file: %w", err)
		}
		s.certs = fc
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{GetCertificate: s.certs.GetCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	if s.reaper != nil {
		go s.reaper.Run(ctx)
	}
	s.log.WithField("listen", ln.Addr().String()).Info("serving")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
