package node

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/test/objectstore"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// What the executor-OOM driver's namespace policy says.
const (
	historyBucket = "spark-history"
	historySecret = "history-s3"
	// keptSeconds is the policy's logs.keepFailedExecutorsSeconds.
	keptSeconds = 20
	// The executor's heap and overhead: the container's memory limit is
	// their sum (Spark's executor pod, 3.5.9 to 4.3.0), below what the
	// JVM holds once its heap is full.
	oomExecutorHeapMiB, oomExecutorOverheadMiB = 512, 32
)

// executorOOMKilled runs one stock PySpark 4.3.0 driver, through the
// chart, in a namespace whose policy ships event logs into a versitygw
// store on the node's host end and keeps failed executors for
// keptSeconds. Its one task gathers rows into a list in the executor's
// JVM until the kernel kills the JVM at the container's memory limit.
// Kept: the kubelet reports the executor OOMKilled, the sidecar keeps the
// pod, `kubectl logs` (pods/log, through the kubelet) shows the task it
// died in, and the pod is deleted after the window. Ending: the
// application fails, ExecutorsOOMKilled in the Event, the annotation and
// the condition. EventLog: the event-log emptyDir is the webhook's
// fsGroup's, and the complete log is in the store.
func executorOOMKilled(ctx context.Context, t *testing.T, release, releaseNS string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	ns := optedInNamespace(ctx, t, release, "spark-oom")
	store := startStore(ctx, t, ns)
	setNamespacePolicy(ctx, t, release, releaseNS, ns, `
      history:
        s3: {endpoint: "`+store.Endpoint+`", bucket: `+historyBucket+`, prefix: events, secretName: `+historySecret+`}
      logs: {keepFailedExecutorsSeconds: `+strconv.Itoa(keptSeconds)+`}`)

	files, err := fileserver.Start(node.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(files.Close)
	gate, letGo := files.Gate("executor-oom/release")
	defer letGo()
	script, err := os.ReadFile("testdata/executoroom.py")
	if err != nil {
		t.Fatal(err)
	}
	r := sleepyJob{name: "executor-oom", version: "4.3.0", Job: sleepyjob.Job{
		Script: "executoroom.py", ScriptText: string(script), Files: map[string]string{"gate": gate},
		Conf: "spark.executor.instances 1\nspark.executor.memory " + strconv.Itoa(oomExecutorHeapMiB) + "m\n" +
			"spark.executor.memoryOverhead " + strconv.Itoa(oomExecutorOverheadMiB) + "m\n" +
			"spark.driver.memory 512m\nspark.task.maxFailures 1\n" + smallExecutors,
	}}.start(ctx, t, ns)

	var kept *corev1.Pod
	t.Run("Kept", func(t *testing.T) { kept = keptOOMExecutor(ctx, t, r) })
	t.Run("EventLogDir", func(t *testing.T) { eventLogDirShared(ctx, t, r) })
	r.waitFor(ctx, t, "saw its job fail", 2*time.Minute, func(ctx context.Context) bool {
		return strings.Contains(r.log(ctx, "spark"), "executor-oom: the job failed")
	})
	letGo()
	done := r.waitEnded(ctx, t, 2*time.Minute)
	ended := time.Now()
	t.Run("EventLog", func(t *testing.T) { eventLogShipped(ctx, t, r, store, ended) })
	t.Run("Ending", func(t *testing.T) { oomEnding(ctx, t, r, done, kept) })
	t.Logf("executor OOM, kept, ended and shipped on the real node: %s in all", time.Since(start).Round(100*time.Millisecond))
}

// optedInNamespace makes a namespace opted in by its label, with the
// driver ServiceAccount and RoleBinding made by hand as docs/install.md
// shows.
func optedInNamespace(ctx context.Context, t testing.TB, release, prefix string) string {
	t.Helper()
	ns := createNamespace(ctx, t, prefix, map[string]string{"sparklet.io/inject": "enabled"})
	kubectl(ctx, t, "create", "serviceaccount", "spark-driver", "-n", ns)
	kubectl(ctx, t, "create", "rolebinding", release+"-sparklet-driver", "-n", ns,
		"--clusterrole="+release+"-sparklet-driver", "--serviceaccount="+ns+":spark-driver")
	return ns
}

// startStore runs versitygw on the host end of the node's veth, the one
// host address pods reach, with the bucket, and puts its key into ns's
// Secret for the sidecar. Its data and log stay beside the node's.
func startStore(ctx context.Context, t *testing.T, ns string) *objectstore.Store {
	t.Helper()
	store, err := objectstore.Start(ctx, binDir, filepath.Join(filepath.Dir(nd.Dir()), "objectstore"), node.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Stop)
	if err := store.MakeBucket(ctx, historyBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: historySecret},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": store.AccessKey, "AWS_SECRET_ACCESS_KEY": store.SecretKey},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return store
}

// setNamespacePolicy gives ns its own policy section (YAML indented under
// the namespace's key) with `helm upgrade --reuse-values`, and waits until
// only webhook pods with it answer. The section goes with the namespace's
// name; it is left in the release.
func setNamespacePolicy(ctx context.Context, t testing.TB, release, releaseNS, ns, section string) {
	t.Helper()
	values := filepath.Join(t.TempDir(), "namespace-policy.yaml")
	if err := os.WriteFile(values, []byte("policy:\n  namespaces:\n    "+ns+":"+section+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	helm(ctx, t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reuse-values", "-f", values)
	webhookRolledOut(ctx, t, release, releaseNS)
	t.Logf("helm upgrade of %s's policy to its webhook pods alone answering: %s", ns, time.Since(start).Round(100*time.Millisecond))
}

// webhookRolledOut waits until only the webhook pods of the release's last
// upgrade answer.
func webhookRolledOut(ctx context.Context, t testing.TB, release, releaseNS string) {
	t.Helper()
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+release+"-sparklet", "--timeout=3m")
	waitOldPodsGone(ctx, t, releaseNS, release+"-sparklet")
}

// keptOOMExecutor waits for the executor the kernel killed, kept by the
// sidecar, reads its log through the kubelet within the window, and waits
// for its deletion after it.
func keptOOMExecutor(ctx context.Context, t *testing.T, r *sleepyRun) *corev1.Pod {
	var pod *corev1.Pod
	r.waitFor(ctx, t, "kept a failed executor", 5*time.Minute, func(ctx context.Context) bool {
		l, err := cp.Client().CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + r.appID + "," + vocab.LabelKeptUntil})
		if err != nil || len(l.Items) == 0 {
			return false
		}
		pod = &l.Items[0]
		return true
	})
	// Spark deletes it as soon as its container has ended, before the
	// kubelet has stopped the pod and written its phase.
	r.waitFor(ctx, t, "had its kept executor's phase written", 15*time.Second, func(ctx context.Context) bool {
		p, err := cp.Client().CoreV1().Pods(r.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil {
			pod = p
		}
		return err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded)
	})
	until, err := strconv.ParseInt(pod.Labels[vocab.LabelKeptUntil], 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", vocab.LabelKeptUntil, pod.Labels[vocab.LabelKeptUntil], err)
	}
	end := time.Unix(until, 0)
	c := pod.Spec.Containers[0]
	logs := podLogs(ctx, t, r.ns, pod.Name, c.Name)
	read := time.Now()
	if !read.Before(end) {
		t.Errorf("its log was read %v after the window ended, want within it: slow to find the pod", read.Sub(end).Round(time.Millisecond))
	}
	if !strings.Contains(logs, "Running task 0.0 in stage") {
		t.Errorf("kubectl logs %s: no task running in it, want the log of the JVM the kernel killed:\n%s", pod.Name, tail(logs, 30))
	}
	// The kernel's doing: the JVM killed at the container's limit (tini
	// exits as its child did, 128 + SIGKILL), not the JVM's own
	// OutOfMemoryError (exit code 52).
	s := containerState(pod, c.Name)
	if pod.Status.Phase != corev1.PodFailed || pod.DeletionTimestamp != nil || s.Terminated == nil || s.Terminated.Reason != "OOMKilled" || s.Terminated.ExitCode != 137 {
		t.Errorf("kept executor %s: phase %s, deletionTimestamp %v, container %+v; want Failed, not deleted, OOMKilled with exit code 137",
			pod.Name, pod.Status.Phase, pod.DeletionTimestamp, s)
	}
	if limit, want := c.Resources.Limits.Memory().Value(), int64(oomExecutorHeapMiB+oomExecutorOverheadMiB)<<20; limit != want {
		t.Errorf("executor memory limit %d, want the heap and the overhead, %d", limit, want)
	}
	if w := time.Until(end); w > (keptSeconds+1)*time.Second {
		t.Errorf("kept until %v from now, want within the policy's %d s", w.Round(time.Second), keptSeconds)
	}
	r.waitFor(ctx, t, "deleted the kept executor", time.Duration(keptSeconds)*time.Second+time.Minute, func(ctx context.Context) bool {
		_, err := cp.Client().CoreV1().Pods(r.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	late := time.Since(end)
	if late < -500*time.Millisecond {
		t.Errorf("the kept executor was gone %v before the end of its window", -late.Round(time.Millisecond))
	}
	t.Logf("executor %s OOMKilled at its %d MiB limit, kept, its log (%d bytes) read through the kubelet %v before its window ended, gone %v after",
		pod.Name, c.Resources.Limits.Memory().Value()>>20, len(logs), end.Sub(read).Round(time.Millisecond), late.Round(time.Millisecond))
	return pod
}

// eventLogDirShared checks what the webhook's fsGroup makes the kubelet
// do: the event-log emptyDir is setgid and the sidecar's group's, so the
// directory Spark makes in it (mode 770, uid 185) is that group's too.
func eventLogDirShared(ctx context.Context, t *testing.T, r *sleepyRun) {
	pod, err := cp.Client().CoreV1().Pods(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || *sc.FSGroup != 65532 {
		t.Fatalf("driver pod's securityContext %+v, want the webhook's fsGroup 65532", sc)
	}
	vol := nd.PodVolume(pod, "empty-dir", patches.VolumeEventLogs)
	for _, dir := range []string{vol, filepath.Join(vol, "eventlog_v2_"+r.appID)} {
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Gid != 65532 || dir == vol && info.Mode()&os.ModeSetgid == 0 {
			t.Errorf("%s: mode %v, owned by %d:%d; want group 65532 (and setgid for the volume)", dir, info.Mode(), st.Uid, st.Gid)
		}
	}
}

// oomEnding checks the driver pod's end: Failed, ExecutorsOOMKilled in the
// Event, the annotation and the condition, naming the executor the
// kernel killed; the ExecutorsFailed Event counts it as OOMKilled.
func oomEnding(ctx context.Context, t *testing.T, r *sleepyRun, done, kept *corev1.Pod) {
	if done.Status.Phase != corev1.PodFailed {
		t.Fatalf("driver pod %s, want Failed\n%s", done.Status.Phase, r.logTails())
	}
	want := "lost to OOM"
	if kept != nil {
		want = kept.Name + " OOMKilled"
	}
	msg := checkEnded(ctx, t, done, vocab.EndExecutorsOOMKilled, want)
	if failed := podEvent(ctx, t, r.ns, r.name, "ExecutorsFailed"); !strings.Contains(failed.Message, "OOMKilled") {
		t.Errorf("ExecutorsFailed: %q, want the executor counted as OOMKilled", failed.Message)
	}
	t.Logf("ended %s: %s", vocab.EndExecutorsOOMKilled, msg)
}

// podEvent waits for an Event with reason on the pod and returns the
// latest.
func podEvent(ctx context.Context, t *testing.T, ns, pod, reason string) corev1.Event {
	t.Helper()
	var events []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": pod, "reason": reason}.String()})
		if err != nil {
			return false, nil
		}
		events = l.Items
		return len(events) > 0, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on %s/%s: %v", reason, ns, pod, err)
	}
	latest := events[0]
	for _, e := range events[1:] {
		if e.LastTimestamp.After(latest.LastTimestamp.Time) {
			latest = e
		}
	}
	return latest
}

// eventLogShipped waits for the log's complete app status in the store and
// checks the log is complete: no in-progress status, and the
// application's end in its last event file.
func eventLogShipped(ctx context.Context, t *testing.T, r *sleepyRun, store *objectstore.Store, ended time.Time) {
	dir := "events/eventlog_v2_" + r.appID + "/"
	var objects []objectstore.Object
	r.waitFor(ctx, t, "had its complete event log in the store", 2*time.Minute, func(ctx context.Context) bool {
		var err error
		objects, err = store.List(ctx, historyBucket, dir)
		return err == nil && slices.ContainsFunc(objects, func(o objectstore.Object) bool { return path.Base(o.Key) == "appstatus_"+r.appID })
	})
	t.Logf("complete app status in the store %v after the driver pod ended; %s", time.Since(ended).Round(time.Millisecond), objectstore.Describe(objects))
	for _, o := range objects {
		if strings.HasSuffix(o.Key, ".inprogress") {
			t.Errorf("%s left in the store after the JVM stopped its log", o.Key)
		}
	}
	events := objectstore.EventFiles(objects, r.appID)
	if len(events) == 0 {
		t.Fatalf("no event file in the store: %s", objectstore.Describe(objects))
	}
	last, err := store.ReadEvents(ctx, historyBucket, events[len(events)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(last, []byte(`"Event":"SparkListenerApplicationEnd"`)) {
		t.Errorf("the last event file %s has no SparkListenerApplicationEnd: the log is not complete", events[len(events)-1])
	}
}
