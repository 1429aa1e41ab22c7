package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/internal/gcpercent"
	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/sidecar"
	"github.com/sparklet/sparklet/vocab"
)

func newSidecarCmd(a *app) *cobra.Command {
	var cfg sidecar.Config
	cmd := &cobra.Command{
		Use:   "sidecar",
		Short: "Run the driver pod's sidecar: the JVM's localhost Kubernetes API and its executors",
		Long: "The sidecar runs inside an injected driver pod as a native sidecar. Its flags\n" +
			"default to the env the webhook injects.",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runSidecar(a, cfg) },
	}
	fs := cmd.Flags()
	env := patches.ParseSidecarEnv(os.LookupEnv)
	fs.StringVar(&cfg.PodName, "pod-name", env.PodName, "the driver pod's name (env "+vocab.EnvPodName+")")
	fs.StringVar(&cfg.Namespace, "namespace", env.Namespace, "the driver pod's namespace (env "+vocab.EnvPodNamespace+")")
	fs.StringVar(&cfg.Listen, "listen", env.Listen, "address of the JVM's API (env "+vocab.EnvListen+")")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", env.MetricsListen, "address of /metrics, /readyz, /healthz (env "+vocab.EnvMetricsListen+")")
	fs.StringVar(&cfg.TokenFile, "token-file", env.TokenFile, "where to write the JVM's token (env "+vocab.EnvTokenFile+")")
	fs.StringVar(&cfg.SparkContainer, "spark-container", env.SparkContainer, "the Spark container to watch (env "+vocab.EnvSparkContainer+")")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig for running outside a pod (default: the pod's service account)")
	fs.DurationVar(&cfg.CleanupTimeout, "cleanup-timeout", 5*time.Second, "how long the deletes after the driver ends may take")
	fs.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics address")
	fs.BoolVar(&cfg.AppPerJVM, "app-per-jvm", env.AppPerJVM, "every JVM of the Spark container is an application of its own (env "+vocab.EnvAppPerJVM+")")
	fs.StringVar(&cfg.ConnectListen, "connect-listen", env.ConnectListen, "address to serve Spark Connect clients on (env "+vocab.EnvConnectListen+")")
	fs.StringVar(&cfg.ConnectBackend, "connect-backend", env.ConnectBackend, "the JVM's Spark Connect address (env "+vocab.EnvConnectBackend+")")
	fs.BoolVar(&cfg.ConnectNoToken, "connect-no-token", env.ConnectNoToken, "the JVM's Spark Connect port checks no token (Spark 3.5): forward clients without one (env "+vocab.EnvConnectNoToken+")")
	fs.StringVar(&cfg.ConnectTLSDir, "connect-tls-dir", env.ConnectTLSDir, "directory with tls.crt and tls.key: serve Spark Connect clients over TLS only (env "+vocab.EnvConnectTLSDir+")")
	cfg.PolicyJSON, cfg.ConfSHA256, cfg.SchedulingSHA256, cfg.EventLogDir = env.PolicyJSON, env.ConfSHA256, env.SchedulingSHA256, env.EventLogDir
	return cmd
}

func runSidecar(a *app, cfg sidecar.Config) error {
	handOver(a)
	gcpercent.Set(sidecar.GCPercent, os.LookupEnv)
	if err := cfg.Validate(); err != nil {
		return err
	}
	s := sidecar.New(cfg, a.log)
	client, err := sidecarClient(cfg.Kubeconfig, s.WrapTransport)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.Run(ctx, client)
}

// sidecarClient is the sidecar's client of the API server. In a pod it
// acts with the projected service-account token, which the kubelet
// replaces at 80% of its lifetime (pkg/kubelet/token/token_manager.go,
// v1.37.2): rest.InClusterConfig names the token's file (BearerTokenFile,
// client-go rest/config.go, v0.36.6), as a kubeconfig's tokenFile does,
// and client-go rereads that file every minute
// (transport.NewCachedFileTokenSource), so a rotated token reaches the
// sidecar without a restart.
func sidecarClient(kubeconfig string, wrap func(http.RoundTripper) http.RoundTripper) (kubecore.Interface, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "sparklet-sidecar"
	rc.QPS, rc.Burst = 100, 200
	rc.Wrap(wrap)
	return kubecore.New(rc)
}
