package emulator_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/emulator"
)

// TestAgainstRealAPIServer runs both modes straight against a real
// kube-apiserver with kwok nodes: the WebSocket watch must work without
// falling back, the executors must run, and stop must leave nothing. It
// runs with SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test sets them).
func TestAgainstRealAPIServer(t *testing.T) {
	bin := e2egate.BinDir(t, "to start the control plane")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := cluster.StartForTest(ctx, t, bin)
	cs := c.Client()

	for _, mode := range []emulator.Mode{emulator.Spark35, emulator.Spark40} {
		t.Run(string(mode), func(t *testing.T) {
			ns := "emu-" + map[emulator.Mode]string{emulator.Spark35: "35", emulator.Spark40: "40"}[mode]
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			driver := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "driver", Labels: map[string]string{"spark-role": "driver"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-driver", Image: "apache/spark:4.0.0"}},
					NodeSelector: map[string]string{"type": "kwok"},
					Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}},
			}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, driver, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cfg := emulator.NewConfig(mode)
			cfg.Namespace, cfg.AppID, cfg.DriverPodName = ns, "spark-real-"+ns, "driver"
			cfg.PodNamePrefix, cfg.ExecutorImage = "real", "apache/spark:4.0.0"
			l := logrus.New()
			l.SetOutput(os.Stderr)
			l.SetFormatter(&logrus.JSONFormatter{})
			cfg.Log = logrus.NewEntry(l)
			cfg, err := emulator.FromREST(c.RESTConfig(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			d, err := emulator.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(ctx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			const n = 20
			d.SetTarget(n)
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
			defer wcancel()
			if err := d.WaitRunning(wctx, n); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d executors Running in %s", n, time.Since(start).Round(time.Millisecond))
			if err := d.Decommission(ctx, []int{1}, "spark-exec-decom", "true"); err != nil {
				t.Errorf("decommission: %v", err)
			}
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "real-exec-1", metav1.GetOptions{})
			if err != nil || p.Labels["spark-exec-decom"] != "true" {
				t.Errorf("decommission label on real-exec-1: %v %v", err, p.GetLabels())
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
			if st.HTTPFallback != 0 || st.WatchConnects < 2 || st.Gone410 != 0 {
				t.Errorf("the WebSocket watch must work against kube-apiserver: %+v", st)
			}
			if st.Created != n || st.CreateErrors != 0 {
				t.Errorf("created %d, errors %d (%s)", st.Created, st.CreateErrors, st.LastCreateError)
			}
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
				if err != nil {
					return false, err
				}
				cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
				return err == nil && len(pods.Items) == 0 && len(cms.Items) == 0, err
			}); err != nil {
				t.Errorf("executors or ConfigMaps left after stop: %v", err)
			}
		})
	}
}
