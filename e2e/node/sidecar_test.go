package node

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// scaleExecutors is how many executors the scale driver asks for.
const scaleExecutors = 1000

// sidecarOnTheNode runs one stock SparkPi 4.3.0 driver that asks for
// scaleExecutors executors in one batch, each with a node selector no
// node has, so they stay Pending and cost the node nothing. On the real
// node it checks what sparklet injected: the sidecar runs as uid 65532
// with no capabilities, a read-only root and its memory limit
// (Hardened); the conf init container ran the Spark image as uid 185 and
// wrote its emptyDir (ConfInit); the sidecar's memory peak while it
// serves and then deletes the executors stays under its limit, without a
// restart (Executors). No executor is left. The chart's policy allows
// that many executors for the test (helm upgrade), and is put back after.
func sidecarOnTheNode(ctx context.Context, t *testing.T, release, releaseNS, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 7*time.Minute)
	defer cancel()
	setPolicy(ctx, t, release, releaseNS, "policy.limits.maxExecutors", strconv.Itoa(scaleExecutors), "100")

	const name = "spark-scale"
	pod := startPendingDriver(ctx, t, ns, name, scaleExecutors, "spark.kubernetes.allocation.batch.size "+strconv.Itoa(scaleExecutors))
	appID := pod.Labels[vocab.LabelAppID]

	t.Run("Hardened", func(t *testing.T) { hardenedSidecar(t, pod) })
	t.Run("ConfInit", func(t *testing.T) { confInitOnTheNode(t, pod) })
	t.Run("Executors", func(t *testing.T) { sidecarAtScale(ctx, t, pod, appID) })
}

// hardenedSidecar checks the running sidecar as the kernel holds it.
func hardenedSidecar(t *testing.T, pod *corev1.Pod) {
	c, err := nd.Inspect(pod, patches.SidecarName)
	if err != nil {
		t.Fatal(err)
	}
	spec := sidecarSpec(t, pod)
	limit := spec.Resources.Limits.Memory().Value()
	if c.UID != 65532 || c.GID != 65532 || c.CapEff != "0000000000000000" || !c.ReadOnlyRoot || limit == 0 || c.MemoryLimit != limit {
		t.Errorf("sidecar of %s: %+v, want uid and gid 65532, no capabilities, a read-only root and a memory limit of %d", pod.Name, c, limit)
	}
	t.Logf("sidecar on the real node: uid %d gid %d, CapEff %s, read-only root %v, memory limit %d MiB, in use so far %d MiB",
		c.UID, c.GID, c.CapEff, c.ReadOnlyRoot, c.MemoryLimit>>20, c.MemoryPeak>>20)
}

// confInitOnTheNode checks that the conf init container, a native
// sidecar, runs started and never restarted beside the JVM, and that what
// it wrote into the Spark container's conf emptyDir belongs to uid 185,
// the apache/spark image's user: it ran as that user.
func confInitOnTheNode(t *testing.T, pod *corev1.Pod) {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == patches.ConfInitName && (s.State.Running == nil || s.Started == nil || !*s.Started || s.RestartCount != 0) {
			t.Errorf("%s: %+v, started %v, restarts %d; want running, started, never restarted", s.Name, s.State, s.Started, s.RestartCount)
		}
	}
	dir := nd.PodVolume(pod, "empty-dir", patches.VolumeSpark)
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != 185 || st.Gid != 185 {
			t.Errorf("%s: owned by %d:%d, want 185:185 (the conf init container's user)", path, st.Uid, st.Gid)
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(dir, patches.ConfFile))
	if err != nil || !strings.Contains(string(conf), "spark.master") {
		t.Errorf("%s in the emptyDir: %v\n%s", patches.ConfFile, err, conf)
	}
	t.Logf("conf init container: %d files in %s, all 185:185", files, dir)
}

// sidecarAtScale waits for every executor the driver asked for, reads
// the sidecar's memory peak, then deletes the driver and waits until no
// executor is left, reading the peak until the sidecar's container is
// gone.
func sidecarAtScale(ctx context.Context, t *testing.T, pod *corev1.Pod, appID string) {
	start := time.Now()
	selector := vocab.LabelAppID + "=" + appID + "," + vocab.LabelRole + "=executor"
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client().CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(l.Items) >= scaleExecutors, nil
	}); err != nil {
		t.Fatalf("%d executors never created: %v\nsidecar:\n%s", scaleExecutors, err, tail(podLogs(ctx, t, pod.Namespace, pod.Name, patches.SidecarName), 20))
	}
	created := time.Since(start)
	t.Logf("%d Pending executors created in %s", scaleExecutors, created.Round(time.Second))
	running, err := nd.Inspect(pod, patches.SidecarName)
	if err != nil {
		t.Fatal(err)
	}
	atScale := running.MemoryPeak
	if now, err := cp.Client().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
		sidecarNeverRestarted(t, now)
	}

	kubectl(ctx, t, "-n", pod.Namespace, "delete", "pod", pod.Name, "--wait=false")
	start = time.Now()
	peak := running.MemoryPeak
	var left int
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if c, err := nd.Inspect(pod, patches.SidecarName); err == nil {
			peak = max(peak, c.MemoryPeak)
		}
		l, err := cp.Client().CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		left = len(l.Items)
		return left == 0, nil
	}); err != nil {
		t.Errorf("%d executors left 2 minutes after the driver was deleted", left)
	}
	removed := time.Since(start)
	if final, err := cp.Client().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
		sidecarNeverRestarted(t, final)
	}
	if peak >= running.MemoryLimit {
		t.Errorf("sidecar memory peak %d bytes, at its limit %d", peak, running.MemoryLimit)
	}
	t.Logf("%d Pending executors created in %s; sidecar memory peak %.1f MiB with all of them cached, %.1f MiB including their deletion, limit %d MiB; no executor left %s after the driver's deletion",
		scaleExecutors, created.Round(time.Second), float64(atScale)/(1<<20), float64(peak)/(1<<20), running.MemoryLimit>>20, removed.Round(time.Second))
}

// sidecarNeverRestarted fails t if the pod's sidecar restarted (an
// OOM kill among the reasons).
func sidecarNeverRestarted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == patches.SidecarName && (s.RestartCount != 0 || s.LastTerminationState.Terminated != nil) {
			t.Errorf("sidecar restarted %d times (last: %+v), want never", s.RestartCount, s.LastTerminationState.Terminated)
		}
	}
}

// startPendingDriver starts SparkPi 4.3.0 asking for executors that no
// node can take (a node selector no node has), so they stay Pending and
// the driver waits for them, and returns the driver once Running. The
// driver and any executor left are deleted when t ends.
func startPendingDriver(ctx context.Context, t *testing.T, ns, name string, executors int, conf ...string) *corev1.Pod {
	t.Helper()
	extra := "      spark.kubernetes.executor.node.selector.sparklet-no-such-node true\n"
	for _, c := range conf {
		extra += "      " + c + "\n"
	}
	driver := strings.Replace(sparkPi430Pod(name, executors), "      spark.driver.memory 512m\n", "      spark.driver.memory 512m\n"+extra, 1)
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(driver))
	t.Cleanup(func() { removeDriver(t, ns, name) })
	return waitPodPhase(ctx, t, ns, name, corev1.PodRunning)
}

// sidecarMetric sums the samples of a counter of the sidecar's metrics
// whose labels contain every one of labels.
func sidecarMetric(ctx context.Context, url, name string, labels ...string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("sidecar metrics: %w", err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line, l)
		}
		if all {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n, sc.Err()
}

func sidecarSpec(t *testing.T, pod *corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.InitContainers {
		if c.Name == patches.SidecarName {
			return c
		}
	}
	t.Fatalf("pod %s has no %s init container", pod.Name, patches.SidecarName)
	return corev1.Container{}
}

func sidecarPort(t *testing.T, pod *corev1.Pod, name string) int32 {
	t.Helper()
	for _, p := range sidecarSpec(t, pod).Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("sidecar of %s has no port %s", pod.Name, name)
	return 0
}

// removeDriver deletes a driver pod and, should its sidecar not have done
// it, its executors, so that no test after it finds them.
func removeDriver(t *testing.T, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := cp.Client().CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
	if id := p.Labels[vocab.LabelAppID]; id != "" {
		err = pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + id + "," + vocab.LabelRole + "=executor"})
		if err != nil {
			t.Logf("delete the executors of %s: %v", name, err)
		}
	}
}
