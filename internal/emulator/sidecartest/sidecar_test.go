// Package sidecartest runs the emulator through a real sparklet sidecar;
// it is a package of its own so the emulator's unit tests do not build
// the sidecar's dependencies.
package sidecartest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/internal/emulator"
	"github.com/sparklet/sparklet/internal/testenv"
	"github.com/sparklet/sparklet/patches"
)

// TestThroughSidecar runs both modes against `sparklet sidecar` running
// locally for a webhook-injected driver pod on the local control plane,
// with the batch size the injected conf sets. It runs with SPARKLET_E2E=1.
func TestThroughSidecar(t *testing.T) {
	if os.Getenv("SPARKLET_E2E") != "1" {
		t.Skip("set SPARKLET_E2E=1 and SPARKLET_BIN_DIR to start the control plane (make test does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	policy, _ := filepath.Abs("../../../examples/policy.yaml")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: os.Getenv("SPARKLET_BIN_DIR"), Dir: t.TempDir(), PolicyFile: policy})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()

	for _, mode := range []emulator.Mode{emulator.Spark35, emulator.Spark40} {
		t.Run(string(mode), func(t *testing.T) {
			ns := "sidecar-" + map[emulator.Mode]string{emulator.Spark35: "35", emulator.Spark40: "40"}[mode]
			if err := env.CreateNamespace(ctx, ns, true); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile("../../../examples/spark-pi-pod.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict(data, &pod); err != nil {
				t.Fatal(err)
			}
			created, err := env.Client.CoreV1().Pods(ns).Create(ctx, &pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sc, err := env.NewSidecar(created, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Signal(syscall.SIGTERM)
			defer func() {
				if t.Failed() {
					b, _ := os.ReadFile(sc.LogFile())
					t.Logf("sidecar log:\n%s", b)
				}
			}()
			if err := sc.Start(ctx); err != nil {
				t.Fatal(err)
			}
			token, err := sc.Token()
			if err != nil {
				t.Fatal(err)
			}
			conf, _ := patches.ParseSparkConf(created.Annotations[patches.AnnotationEffectiveConf])
			cfg := emulator.NewConfig(mode)
			cfg.BatchSize, _ = strconv.Atoi(conf["spark.kubernetes.allocation.batch.size"])
			cfg.Server, cfg.Token = "http://"+sc.Listen, token
			cfg.Namespace, cfg.AppID, cfg.DriverPodName = conf["spark.kubernetes.namespace"], conf["spark.app.id"], created.Name
			cfg.ExecutorImage = conf["spark.kubernetes.container.image"]
			cfg.DeleteGracePeriod = 100 * time.Millisecond
			l := logrus.New()
			l.SetFormatter(&logrus.JSONFormatter{})
			cfg.Log = logrus.NewEntry(l)
			d, err := emulator.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(ctx); err != nil {
				t.Fatal(err)
			}
			const n = 20
			start := time.Now()
			d.SetTarget(n)
			if err := d.WaitRunning(ctx, n); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d executors Running through the sidecar in %s", n, time.Since(start).Round(time.Millisecond))
			if err := d.Decommission(ctx, []int{1}, "spark-exec-decom", "true"); err != nil {
				t.Errorf("decommission: %v", err)
			}
			if err := d.KillExecutors(ctx, []int{n - 1, n}); err != nil {
				t.Errorf("kill: %v", err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return d.Running() == n-2, nil
			}); err != nil {
				t.Errorf("after the kill %d running, want %d", d.Running(), n-2)
			}
			if err := d.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			st := d.Stats()
			t.Logf("stats: %+v", st)
			if st.HTTPFallback != 0 || st.Gone410 != 0 || st.CreateErrors != 0 || st.Created != n {
				t.Errorf("want the WebSocket watch, no 410 and %d clean creates: %+v", n, st)
			}
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				sel := metav1.ListOptions{LabelSelector: "spark-app-selector=" + cfg.AppID}
				pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector + ",spark-role=executor"})
				if err != nil {
					return false, err
				}
				cms, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
				return err == nil && len(pods.Items) == 0 && len(cms.Items) == 0, err
			}); err != nil {
				t.Errorf("executors or ConfigMaps left after stop: %v", err)
			}
		})
	}
}
