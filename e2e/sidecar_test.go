package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/syncbuffer"
	"github.com/sparklet/sparklet/vocab"
)

// driverRun is one injected driver pod with its sidecar running locally as
// that pod would run it.
type driverRun struct {
	t     *testing.T
	ns    string
	pod   *corev1.Pod
	appID string
	sc    *testenv.Sidecar
}

// startDriver creates the example driver pod through the webhook and runs
// its sidecar locally with a token from the TokenRequest API.
func startDriver(t *testing.T, ns string) *driverRun {
	t.Helper()
	ctx := ctxFor(t)
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireInjected(t, pod)
	sc := env.StartSidecar(ctx, t, pod)
	d := &driverRun{t: t, ns: ns, pod: pod, appID: pod.Labels[vocab.LabelAppID], sc: sc}
	return d
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// emulator is the JVM, configured as the injected conf says, with a short
// polling interval and delete grace period. Its log is shown if the test
// fails.
func (d *driverRun) emulator(mode emulator.Mode, tweaks ...func(*emulator.Config)) *emulator.Driver {
	cfg, err := d.sc.EmulatorConfig(mode)
	if err != nil {
		d.t.Fatal(err)
	}
	cfg.PollInterval, cfg.DeleteGracePeriod = 2*time.Second, 100*time.Millisecond
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	logs := &syncbuffer.Buffer{}
	cfg.Log = emulator.JSONLog(logs)
	jvm, err := emulator.New(cfg)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		if d.t.Failed() {
			d.t.Logf("emulator log:\n%s", tailLines(logs.String(), 30))
		}
	})
	return jvm
}

// leftovers counts what of the application is still in the API server.
func (d *driverRun) leftovers(ctx context.Context) (pods, configMaps int) {
	sel := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + d.appID}
	p, err := env.Client.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector + ",spark-role=executor"})
	if err == nil {
		pods = len(p.Items)
	}
	c, err := env.Client.CoreV1().ConfigMaps(d.ns).List(ctx, sel)
	if err == nil {
		configMaps = len(c.Items)
	}
	return pods, configMaps
}

func (d *driverRun) waitClean(ctx context.Context) time.Duration {
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, c := d.leftovers(ctx)
		return p == 0 && c == 0, nil
	})
	if err != nil {
		p, c := d.leftovers(ctx)
		d.t.Fatalf("%d executors and %d ConfigMaps of %s left", p, c, d.appID)
	}
	return time.Since(start)
}

func TestSidecarRunsExecutorsAndCleansUp(t *testing.T) {
	for _, mode := range []emulator.Mode{emulator.Spark35, emulator.Spark40} {
		t.Run("spark"+string(mode), func(t *testing.T) {
			ctx := ctxFor(t)
			ns := namespace(t, true)
			d := startDriver(t, ns)
			// Spark's own polling interval (30 s) here. A polling LIST
			// sent before a create returns replaces the snapshot without
			// a pod the watch already showed; ExecutorPodsAllocator.
			// onNewSnapshots (Spark 3.5 and 4.0) forgets a newly created
			// executor once any snapshot had it but counts from the last
			// snapshot, so Spark then creates one executor more than
			// asked. A 2 s poll during the 50 creates makes that race of
			// Spark's likely, and this test counts pods.
			jvm := d.emulator(mode, func(c *emulator.Config) { c.PollInterval = 30 * time.Second })
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			if err := jvm.Start(runCtx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			jvm.SetTarget(50)
			if err := jvm.WaitRunning(ctx, 50); err != nil {
				t.Fatal(err)
			}
			t.Logf("Spark %s through the sidecar: 50 executors Running in %s", mode, time.Since(start).Round(time.Millisecond))
			pods, _ := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
			for _, p := range pods.Items {
				if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != d.pod.UID || p.Labels[vocab.LabelManaged] != "true" {
					t.Fatalf("executor %s not owned by the driver or not labelled: %+v", p.Name, p.ObjectMeta)
				}
				if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
					t.Fatalf("executor %s would get a service-account token", p.Name)
				}
			}
			if len(pods.Items) != 50 {
				t.Fatalf("%d executor pods, want 50", len(pods.Items))
			}
			var kill []int
			for i := 1; i <= 10; i++ {
				kill = append(kill, i)
			}
			if err := jvm.KillExecutors(ctx, kill); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				p, _ := d.leftovers(ctx)
				return p == 40, nil
			})
			if err != nil {
				p, _ := d.leftovers(ctx)
				t.Fatalf("after killing 10: %d executors, want 40", p)
			}
			// The JVM learns of the kill through the sidecar's watch.
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return jvm.Running() == 40, nil
			})
			if err != nil {
				t.Fatalf("after killing 10 the JVM sees %d running, want 40", jvm.Running())
			}
			// spark.kubernetes.executor.decommissionLabel
			if err := jvm.Decommission(ctx, []int{11, 12}, "spark.decommissioning", "true"); err != nil {
				t.Fatal(err)
			}
			labelled, _ := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark.decommissioning=true"})
			if len(labelled.Items) != 2 {
				t.Errorf("%d executors labelled for decommissioning, want 2", len(labelled.Items))
			}
			if err := jvm.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			d.waitClean(ctx)
			st := jvm.Stats()
			t.Logf("JVM requests: %v", st.Requests)
			if st.HTTPFallback != 0 || st.Gone410 != 0 {
				t.Errorf("the watch fell back to HTTP (%d times) or got a 410 (%d times)", st.HTTPFallback, st.Gone410)
			}
			if st.Created != 50 || st.CreateErrors != 0 {
				t.Errorf("%d executors created with %d errors (last: %s), want 50 clean creates", st.Created, st.CreateErrors, st.LastCreateError)
			}
		})
	}
}

func TestSidecarCleansUpWhenTheDriverContainerEnds(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	d := startDriver(t, ns)
	jvm := d.emulator(emulator.Spark40)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := jvm.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	jvm.SetTarget(20)
	if err := jvm.WaitRunning(ctx, 20); err != nil {
		t.Fatal(err)
	}
	stop() // the JVM dies without calling stop()
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, d.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", Image: "apache/spark:3.5.4", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.Now()}}}}
	ended := time.Now()
	if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.sc.Exited():
		if err != nil {
			t.Errorf("sidecar exited with %v, want 0 so the pod can complete", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("sidecar did not exit after the Spark container ended")
	}
	d.waitClean(ctx)
	t.Logf("cleanup after the Spark container ended: %s", time.Since(ended).Round(time.Millisecond))
	events, _ := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=CleanedUp"})
	if len(events.Items) != 1 {
		t.Errorf("%d CleanedUp events on the driver pod, want 1", len(events.Items))
	}
}

func TestQuotaRefusalsAreShieldedAndExplained(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("6")}}}
	if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		q, err := env.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, nil
	})
	if err != nil {
		t.Fatal("quota not initialised")
	}
	d := startDriver(t, ns) // the driver is pod 1 of 6
	jvm := d.emulator(emulator.Spark40)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := jvm.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	jvm.SetTarget(10)
	if err := jvm.WaitRunning(ctx, 5); err != nil {
		t.Fatal(err)
	}
	// Let the JVM's one-second allocation loop hit the quota for a while.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return jvm.Stats().CreateErrors >= 6, nil
	})
	if err != nil {
		t.Fatalf("the JVM saw %d refused creates", jvm.Stats().CreateErrors)
	}
	stop() // no more retries: the counts below stay put
	elapsed := time.Since(start)
	st := jvm.Stats()
	creates := metric(t, d.sc.Metrics, `sparklet_sidecar_api_requests_total{code="403",method="POST"}`)
	shielded := metric(t, d.sc.Metrics, "sparklet_sidecar_quota_short_circuits_total")
	// Every API refusal is counted in one Event; repeats are written at
	// most every 10 s.
	events := &corev1.EventList{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ExecutorQuota"})
		if err != nil {
			return false, nil
		}
		events = list
		return len(events.Items) == 1 && int(events.Items[0].Count) == int(creates), nil
	})
	t.Logf("over %s: JVM saw %d refusals; %d reached the API server, %d were answered by the sidecar; %d events",
		elapsed.Round(time.Millisecond), st.CreateErrors, int(creates), int(shielded), len(events.Items))
	// Backoff starts at 2 s and doubles: at most one API create per period.
	if periods := 1 + int(elapsed/(2*time.Second)); int(creates) > periods {
		t.Errorf("%d refused creates reached the API server in %s, want at most %d (one per backoff period)", int(creates), elapsed, periods)
	}
	if shielded == 0 || err != nil {
		t.Errorf("want shielded retries and one ExecutorQuota event counting each API refusal: shielded %v, refusals %v, events %+v", shielded, creates, events.Items)
	}
	// The first refusal is the API server's; later ones may be the
	// sidecar's answer from memory. Both must explain the quota.
	for _, msg := range []string{st.FirstCreateError, st.LastCreateError} {
		if !strings.Contains(msg, "exceeded quota") {
			t.Errorf("the JVM's error does not explain the quota: %s", msg)
		}
	}
}

func TestSidecarRestartMidAllocation(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	d := startDriver(t, ns)
	// Spark's polling interval, for the reason in
	// TestSidecarRunsExecutorsAndCleansUp: the JVM must see the executors
	// through its watch, resumed across the restart.
	jvm := d.emulator(emulator.Spark35, func(c *emulator.Config) { c.PollInterval = 30 * time.Second })
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := jvm.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	jvm.SetTarget(30)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return jvm.Stats().Created >= 10, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet restarts a native sidecar in place: same pod, same
	// emptyDir. The JVM keeps running with the token it read at start.
	d.sc.Signal(syscall.SIGKILL)
	<-d.sc.Exited()
	if err := d.sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jvm.WaitRunning(ctx, 30); err != nil {
		t.Fatal(err)
	}
	t.Logf("JVM across the restart: %+v", jvm.Stats().Requests)
	pods, _ := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
	if len(pods.Items) != 30 {
		t.Errorf("%d executors after the restart, want 30", len(pods.Items))
	}
}

// metric reads one sample from the sidecar's /metrics.
func metric(t *testing.T, addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, name+" ") {
			v, _ := strconv.ParseFloat(strings.TrimPrefix(line, name+" "), 64)
			return v
		}
	}
	return 0
}
