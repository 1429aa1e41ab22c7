package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/sidecar"
)

func runSidecar(args []string) error {
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	var cfg sidecar.Config
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	fs.StringVar(&cfg.PodName, "pod-name", env("SPARKLET_POD_NAME", ""), "the driver pod's name (env SPARKLET_POD_NAME)")
	fs.StringVar(&cfg.Namespace, "namespace", env("SPARKLET_POD_NAMESPACE", ""), "the driver pod's namespace (env SPARKLET_POD_NAMESPACE)")
	fs.StringVar(&cfg.Listen, "listen", env("SPARKLET_LISTEN", "127.0.0.1:7443"), "address of the JVM's API (env SPARKLET_LISTEN)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", env("SPARKLET_METRICS_LISTEN", ":7444"), "address of /metrics, /readyz, /healthz (env SPARKLET_METRICS_LISTEN)")
	fs.StringVar(&cfg.TokenFile, "token-file", env("SPARKLET_TOKEN_FILE", "/var/run/sparklet/jvm/token"), "where to write the JVM's token (env SPARKLET_TOKEN_FILE)")
	fs.StringVar(&cfg.SparkContainer, "spark-container", env("SPARKLET_SPARK_CONTAINER", ""), "the Spark container to watch (env SPARKLET_SPARK_CONTAINER)")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig for running outside a pod (default: the pod's service account)")
	fs.DurationVar(&cfg.CleanupTimeout, "cleanup-timeout", 5*time.Second, "how long the deletes after the driver ends may take")
	fs.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics address")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.PolicyJSON = os.Getenv("SPARKLET_POLICY")
	cfg.ConfSHA256 = os.Getenv("SPARKLET_CONF_SHA256")
	log, err := newLogger(*logLevel, "sidecar")
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = "sparklet-sidecar"
	rc.QPS, rc.Burst = 100, 200
	s := sidecar.New(cfg, log)
	rc.Wrap(s.WrapTransport)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.Run(ctx, client)
}
