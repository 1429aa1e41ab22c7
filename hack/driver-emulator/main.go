package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/test/emulator"
)

type summary struct {
	emulator.Stats
	Target        int     `json:"target"`
	SecondsToRun  float64 `json:"secondsToAllRunning,omitempty"`
	Killed        int     `json:"killed"`
	Error         string  `json:"error,omitempty"`
	ServerKind    string  `json:"server"`
	BatchSize     int     `json:"batchSize"`
	BatchDelayMS  int64   `json:"batchDelayMs"`
	PollIntervalS float64 `json:"pollIntervalS"`
}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		kubeconfig, tokenFile, mode, logLevel string
		executors, kill                       int
		hold, timeout                         time.Duration
		series                                bool
	)
	cfg := emulator.Config{}
	fs := flag.NewFlagSet("driver-emulator", flag.ContinueOnError)
	fs.StringVar(&cfg.Server, "server", "", "master URL without k8s://: http://127.0.0.1:PORT (sidecar) or https://HOST:PORT; default from --kubeconfig")
	fs.StringVar(&cfg.Token, "token", "", "bearer token (spark.kubernetes.authenticate.oauthToken)")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the bearer token")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for a real API server (token or client certificate)")
	fs.StringVar(&cfg.Namespace, "namespace", "default", "spark.kubernetes.namespace")
	fs.StringVar(&cfg.AppID, "app-id", "", "spark.app.id, the spark-app-selector value")
	fs.StringVar(&cfg.AppName, "app-name", "spark-emulator", "spark.app.name")
	fs.StringVar(&cfg.DriverPodName, "driver-pod", "", "spark.kubernetes.driver.pod.name")
	fs.StringVar(&cfg.PodNamePrefix, "prefix", "", "spark.kubernetes.executor.podNamePrefix (default <app-name>-<unique id>)")
	fs.StringVar(&cfg.ExecutorImage, "image", "", "executor image")
	fs.StringVar(&mode, "mode", "4.0", "Spark release to play: 3.5 (fabric8 6.7.2, OkHttp) or 4.0 (fabric8 7.1.0, Vert.x)")
	fs.IntVar(&cfg.BatchSize, "batch-size", 0, "spark.kubernetes.allocation.batch.size (default 5 for 3.5, 10 for 4.0)")
	fs.DurationVar(&cfg.BatchDelay, "batch-delay", time.Second, "spark.kubernetes.allocation.batch.delay")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", 30*time.Second, "spark.kubernetes.executor.apiPollingInterval")
	fs.DurationVar(&cfg.ExecutorTimeout, "executor-timeout", 600*time.Second, "spark.kubernetes.allocation.executor.timeout")
	fs.DurationVar(&cfg.DeleteGracePeriod, "delete-grace-period", 5*time.Second, "spark.kubernetes.dynamicAllocation.deleteGracePeriod")
	fs.BoolVar(&cfg.EnableWatch, "watch", true, "spark.kubernetes.executor.enableApiWatcher")
	fs.BoolVar(&cfg.EnablePolling, "polling", true, "spark.kubernetes.executor.enableApiPolling")
	fs.IntVar(&executors, "executors", 10, "executors to request")
	fs.IntVar(&kill, "kill", 0, "executors to kill (dynamic allocation) once all run")
	fs.DurationVar(&hold, "hold", 0, "how long to hold after all run and again after the kill")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up waiting for the executors after this long")
	fs.BoolVar(&series, "series", false, "include the running-count time series in the summary")
	fs.StringVar(&logLevel, "log-level", "info", "log level")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}

	log := logrus.New()
	log.SetFormatter(&logrus.JSONFormatter{})
	log.SetOutput(os.Stderr)
	lvl, err := logrus.ParseLevel(logLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "--log-level: %v\n", err)
		return 2
	}
	log.SetLevel(lvl)
	cfg.Log = logrus.NewEntry(log)
	if cfg.Mode, err = emulator.ParseMode(mode); err != nil {
		fmt.Fprintf(os.Stderr, "--mode: %v\n", err)
		return 2
	}
	if executors < 0 || kill < 0 || kill > executors {
		fmt.Fprintf(os.Stderr, "--executors %d and --kill %d: need 0 <= kill <= executors\n", executors, kill)
		return 2
	}
	if tokenFile != "" {
		if cfg.Token != "" {
			fmt.Fprintln(os.Stderr, "--token and --token-file: give one (Spark refuses both too)")
			return 2
		}
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "--token-file: %v\n", err)
			return 2
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	kind := "sidecar"
	if kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			fmt.Fprintf(os.Stderr, "--kubeconfig: %v\n", err)
			return 2
		}
		server, token := cfg.Server, cfg.Token
		if cfg, err = emulator.FromREST(rc, cfg); err != nil {
			fmt.Fprintf(os.Stderr, "--kubeconfig: %v\n", err)
			return 2
		}
		if server != "" {
			cfg.Server = server
		}
		if token != "" {
			cfg.Token = token
		}
		kind = "apiserver"
	}

	d, err := emulator.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	eff := d.Config()
	out := summary{Target: executors, ServerKind: kind, BatchSize: eff.BatchSize,
		BatchDelayMS: eff.BatchDelay.Milliseconds(), PollIntervalS: eff.PollInterval.Seconds()}
	err = scenario(ctx, d, executors, kill, hold, timeout, &out)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if serr := d.Stop(stopCtx); serr != nil && err == nil {
		err = serr
	}
	out.Stats = d.Stats()
	if !series {
		out.Series = nil
	}
	if err != nil {
		out.Error = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}

func scenario(ctx context.Context, d *emulator.Driver, executors, kill int, hold, timeout time.Duration, out *summary) error {
	pause := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(hold):
			return nil
		}
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	start := time.Now()
	d.SetTarget(executors)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := d.WaitRunning(wctx, executors); err != nil {
		return err
	}
	out.SecondsToRun = time.Since(start).Seconds()
	if err := pause(); err != nil {
		return err
	}
	if kill > 0 {
		ids := d.RunningIDs()
		victims := ids[max(len(ids)-kill, 0):]
		if err := d.KillExecutors(ctx, victims); err != nil {
			return fmt.Errorf("kill: %w", err)
		}
		out.Killed = len(victims)
		if err := pause(); err != nil {
			return err
		}
	}
	return nil
}
