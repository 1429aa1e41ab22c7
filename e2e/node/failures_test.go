package node

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// eachVersion runs f as a subtest of t for the newest pinned Spark line,
// nine minutes each: on CI's two cores, beside the pod runner's suite,
// executors took two and a half minutes to register. The pod runner's
// suite (e2e/realspark) runs the same job on 3.5.9 too, and skips its own
// run of the version here (its nodeSparkVersion, which must match); on the
// node each version costs about five minutes of CI, so the list holds only
// the newest.
func eachVersion(ctx context.Context, t *testing.T, f func(ctx context.Context, t *testing.T, version string)) {
	for _, v := range []string{"4.3.0"} {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 9*time.Minute)
			defer cancel()
			f(ctx, t, v)
		})
	}
}

// driverKilled kills the driver JVM with SIGKILL mid-job, as the kernel's
// OOM killer would, so Spark's own stop() never runs: the kubelet reports
// the Spark container ended, the sidecar deletes the executors, and the
// pod fails with the JVM's exit status, ending as DriverKilled by SIGKILL.
func driverKilled(ctx context.Context, t *testing.T, ns string) {
	eachVersion(ctx, t, func(ctx context.Context, t *testing.T, v string) {
		r := sleepyJob{name: "driver-killed-" + dashed(v), version: v, Job: sleepyjob.Job{Tasks: 40, SleepMS: 1000, Conf: sleepyjob.FixedConf + smallExecutors}}.start(ctx, t, ns)
		r.waitTasks(ctx, t, 2)
		r.kill(ctx, t, "spark", "org.apache.spark.deploy.SparkSubmit")
		killed := time.Now()
		gone := r.waitClean(t, time.Minute)
		// The kubelet's relist (every second) and status update, then the
		// sidecar's deletes: a few seconds.
		if took := gone.Sub(killed); took > 10*time.Second {
			t.Errorf("executors gone %v after the driver JVM was killed, want within 10s", took.Round(time.Millisecond))
		}
		done := r.waitEnded(ctx, t, time.Minute)
		if done.Status.Phase != corev1.PodFailed {
			t.Errorf("driver pod %s after its JVM was killed, want Failed", done.Status.Phase)
		}
		// tini, the container's first process, exits as its child did:
		// 128 + SIGKILL.
		if s := containerState(done, "spark"); s.Terminated == nil || s.Terminated.ExitCode != 137 {
			t.Errorf("Spark container after its JVM was killed: %+v, want terminated with exit code 137", s)
		}
		if s := initContainerState(done, patches.SidecarName); s.Terminated == nil {
			t.Errorf("sidecar of the ended driver: %+v, want terminated", s)
		}
		checkEnded(ctx, t, done, vocab.EndDriverKilled, "exit code 137 (SIGKILL)")
		alive, _, seen, _ := r.execs.Counts()
		if seen != 2 || alive != 0 {
			t.Errorf("%d executor pods, %d alive at the end; want 2, none alive", seen, alive)
		}
		r.execs.CheckNoDuplicates(t)
		t.Logf("Spark %s on the real node: executors gone %v after the driver JVM was killed", v, gone.Sub(killed).Round(time.Millisecond))
	})
}

// sidecarKilled kills the sidecar with SIGKILL while the JVM runs its
// executors. The kubelet restarts it, a native sidecar (an init container
// that restarts Always); the restarted sidecar rebuilds its state from
// the API server, the JVM's requests reach it again, and the job finishes.
func sidecarKilled(ctx context.Context, t *testing.T, ns string) {
	eachVersion(ctx, t, func(ctx context.Context, t *testing.T, v string) {
		r := sleepyJob{name: "sidecar-killed-" + dashed(v), version: v, Job: sleepyjob.Job{Tasks: 20, SleepMS: 1000, Conf: sleepyjob.FixedConf + smallExecutors}}.start(ctx, t, ns)
		r.waitFor(ctx, t, "created an executor pod", 3*time.Minute, func(context.Context) bool {
			_, _, seen, _ := r.execs.Counts()
			return seen > 0
		})
		// The image's /sparklet execs /sparklet-sidecar.
		r.kill(ctx, t, patches.SidecarName, "/sparklet-sidecar")
		killed := time.Now()
		r.waitPod(ctx, t, "restarted its sidecar", time.Minute, func(p *corev1.Pod) bool {
			for _, s := range p.Status.InitContainerStatuses {
				if s.Name == patches.SidecarName {
					return s.RestartCount > 0 && s.Started != nil && *s.Started
				}
			}
			return false
		})
		restarted := time.Since(killed)
		r.checkSucceeded(ctx, t, r.waitEnded(ctx, t, 6*time.Minute))
		r.waitClean(t, 30*time.Second)
		// As on the pod runner (e2e/realspark TestSidecarKilled): a kill
		// between the API server creating an executor and the JVM hearing
		// of it makes the JVM ask for another under a new id, so one
		// executor beyond the two asked for may run, never a duplicate.
		_, most, seen, _ := r.execs.Counts()
		if most > 3 {
			t.Errorf("%d executors alive at once, want at most 3 (2 and one whose create the kill interrupted)", most)
		}
		r.execs.CheckNoDuplicates(t)
		t.Logf("Spark %s on the real node: sidecar killed, started again by the kubelet %v later; %d executor pods, at most %d alive at once",
			v, restarted.Round(time.Millisecond), seen, most)
	})
}

// apiServerRestarted restarts kube-apiserver mid-job. The node's kubelet
// and kube-proxy and the webhook's pods outlive it, the sidecar's
// informers reconnect, the job finishes, and a driver is still injected
// through the chart's webhook afterwards.
func apiServerRestarted(ctx context.Context, t *testing.T, ns, releaseNS string) {
	eachVersion(ctx, t, func(ctx context.Context, t *testing.T, v string) {
		webhooks := webhookPodStates(ctx, t, releaseNS)
		r := sleepyJob{name: "apiserver-restart-" + dashed(v), version: v, Job: sleepyjob.Job{Tasks: 30, SleepMS: 1000, Conf: sleepyjob.FixedConf + smallExecutors}}.start(ctx, t, ns)
		r.waitTasks(ctx, t, 2)
		restart := time.Now()
		if err := cp.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		back := time.Since(restart)
		r.checkSucceeded(ctx, t, r.waitEnded(ctx, t, 6*time.Minute))
		r.waitClean(t, 30*time.Second)
		if _, _, seen, _ := r.execs.Counts(); seen != 2 {
			t.Errorf("%d executor pods, want 2", seen)
		}
		r.execs.CheckNoDuplicates(t)

		if err := nd.Alive(); err != nil {
			t.Errorf("the node after kube-apiserver restarted: %v", err)
		}
		node, err := cp.Client().CoreV1().Nodes().Get(ctx, "sparklet-node", metav1.GetOptions{})
		if err != nil || !nodeReady(node) {
			t.Errorf("node after kube-apiserver restarted: %v, want Ready", err)
		}
		if after := webhookPodStates(ctx, t, releaseNS); after != webhooks {
			t.Errorf("webhook pods before kube-apiserver restarted %q, after %q; want the same, never restarted", webhooks, after)
		}
		if out := kubectl(ctx, t, "-n", ns, "create", "--dry-run=server", "-o", "jsonpath={.spec.initContainers[*].name}", "-f", "-",
			withStdin(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after-restart", "labels": {"spark-role": "driver"}},
"spec": {"containers": [{"name": "spark", "image": "apache/spark:`+v+`", "args": ["driver"]}]}}`)); !strings.Contains(out, patches.SidecarName) {
			t.Errorf("a driver after kube-apiserver restarted: init containers %q, want the sidecar injected", out)
		}
		t.Logf("Spark %s on the real node: kube-apiserver back after %v, the job done", v, back.Round(time.Millisecond))
	})
}

// webhookPodStates names the release's webhook pods with their containers'
// restart counts, all Ready.
func webhookPodStates(ctx context.Context, t *testing.T, releaseNS string) string {
	t.Helper()
	pods, err := cp.Client().CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=sparklet"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		desc := p.Name
		for _, s := range p.Status.ContainerStatuses {
			desc += " " + s.Name + ":restarts=" + strconv.Itoa(int(s.RestartCount))
			if !s.Ready {
				desc += ":not-ready"
			}
		}
		names = append(names, desc)
	}
	return strings.Join(names, ", ")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerState(p *corev1.Pod, name string) corev1.ContainerState {
	return stateOf(p.Status.ContainerStatuses, name)
}

func initContainerState(p *corev1.Pod, name string) corev1.ContainerState {
	return stateOf(p.Status.InitContainerStatuses, name)
}

func stateOf(statuses []corev1.ContainerStatus, name string) corev1.ContainerState {
	for _, s := range statuses {
		if s.Name == name {
			return s.State
		}
	}
	return corev1.ContainerState{}
}

// dashed is a version as a name's part: 4.3.0 → 4-3-0.
func dashed(version string) string { return strings.ReplaceAll(version, ".", "-") }
