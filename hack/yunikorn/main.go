// Command yunikorn-scheduler is Apache YuniKorn's scheduler, the k8s shim
// with the core embedded, started as the shim's own main starts it
// (yunikorn-k8shim v1.9.0, pkg/cmd/shim/main.go) but without the core's
// REST web app: that listens on ":9080", every interface, and its address
// cannot be set (yunikorn-core v1.9.0, pkg/webservice/webservice.go). In its
// place this serves /readyz (200 once the shim has synced the cluster and
// registered with the core) and the core's Prometheus /metrics on --listen,
// a loopback address.
//
// The shim reads KUBECONFIG and NAMESPACE (where its yunikorn-configs
// ConfigMap is) from the environment.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/apache/yunikorn-core/pkg/entrypoint"
	corelog "github.com/apache/yunikorn-core/pkg/log"
	"github.com/apache/yunikorn-k8shim/pkg/client"
	"github.com/apache/yunikorn-k8shim/pkg/common/constants"
	"github.com/apache/yunikorn-k8shim/pkg/conf"
	"github.com/apache/yunikorn-k8shim/pkg/log"
	"github.com/apache/yunikorn-k8shim/pkg/plugin/predicates"
	"github.com/apache/yunikorn-k8shim/pkg/shim"
)

func main() {
	flags := flag.NewFlagSet("yunikorn-scheduler", flag.ExitOnError)
	listen := flags.String("listen", "127.0.0.1:9080", "loopback address for /readyz and /metrics")
	_ = flags.Parse(os.Args[1:])
	if err := run(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "yunikorn-scheduler:", err)
		os.Exit(1)
	}
}

func run(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: give a loopback address such as 127.0.0.1:9080", listen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", promhttp.Handler())
	go func() {
		if err := http.Serve(ln, mux); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Log(log.Shim).Error("readiness endpoint", zap.Error(err))
		}
	}()

	log.Log(log.Shim).Info(conf.GetBuildInfoString())
	predicates.EnableOptionalKubernetesFeatureGates()
	configMaps, err := client.LoadBootstrapConfigMaps()
	if err != nil {
		return fmt.Errorf("load the configuration ConfigMaps: %w", err)
	}
	if err := conf.UpdateConfigMaps(configMaps, true); err != nil {
		return fmt.Errorf("apply the configuration ConfigMaps: %w", err)
	}
	log.Log(log.Shim).Info("Starting scheduler", zap.String("name", constants.SchedulerName))
	corelog.InitializeLogger(log.RootLogger(), log.GetZapConfigs())
	services := entrypoint.StartAllServicesWithParams(false, false) // no web app
	ss := shim.NewShimScheduler(services.RMProxy, conf.GetSchedulerConf(), configMaps)
	if err := ss.Run(); err != nil {
		return fmt.Errorf("start the scheduler: %w", err)
	}
	ready.Store(true)
	log.Log(log.Shim).Info("scheduler ready", zap.String("listen", ln.Addr().String()))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	log.Log(log.Shim).Info("Shutdown signal received, exiting...")
	ss.Stop()
	return nil
}
