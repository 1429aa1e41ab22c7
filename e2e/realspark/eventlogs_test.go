package realspark

import (
	"bytes"
	"context"
	"encoding/json"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/objectstore"
	"github.com/sparklet/sparklet/vocab"
)

// The suite's object store, as testdata/policy.yaml's history sections
// name it.
const (
	policyStoreEndpoint = "http://suite-store.invalid"
	historyBucket       = "spark-history"
	historyPrefix       = "events/"
	historySecret       = "history-s3"
)

// startStore starts the suite's object store on the pod runner's bridge,
// where drivers' sidecars reach it, with the bucket the policy names.
func startStore(ctx context.Context, dir string) (*objectstore.Store, error) {
	s, err := objectstore.Start(ctx, os.Getenv("SPARKLET_BIN_DIR"), filepath.Join(dir, "store"), env.Runner.HostIP())
	if err != nil {
		return nil, err
	}
	if err := s.MakeBucket(ctx, historyBucket); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// eventLogJob runs testdata/eventlogs.py: 24 jobs of padding (about 12 MiB
// of events, two rolled files at the policy's 10m), then a 2-task job whose
// tasks sleep sleepMS.
func eventLogJob(sleepMS int) sleepy {
	return sleepy{tasks: 24, sleepMS: sleepMS, script: "eventlogs.py",
		conf: "spark.executor.instances 1\nspark.executor.memory 512m\nspark.driver.memory 512m\n"}
}

// startEventLogJob starts the job in a namespace of the test's own, with
// the store's credential in the Secret the policy names, and returns the
// namespace and the application id once the JVM runs.
func startEventLogJob(t *testing.T, d spark.Dist, job sleepy) (ns, appID string) {
	t.Helper()
	if store == nil {
		t.Fatalf("no object store: %v", storeErr)
	}
	ns = namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := env.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: historySecret},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": store.AccessKey, "AWS_SECRET_ACCESS_KEY": store.SecretKey},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.start(t, ns, d)
	running := waitPod(t, ns, sleepyDriver, "ran its driver container", 3*time.Minute, containerRunning("spark"))
	return ns, running.Labels[vocab.LabelAppID]
}

// TestEventLogs runs a job whose event log the sidecar ships into the
// store: complete (the application's end event in its last file, the
// complete app status, no in-progress one) and rolled into several files,
// with the executor's log link from the policy's template.
// The JVM holds no storage credential: not in its environment, not in
// its conf, and the Secret's files are not in its mount namespace, where
// the sidecar's are.
func TestEventLogs(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			ns, appID := startEventLogJob(t, d, eventLogJob(100))
			checkNoCredential(t, ns)
			done := waitPod(t, ns, sleepyDriver, "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			ended := time.Now()
			dir := historyPrefix + "eventlog_v2_" + appID + "/"
			objects := waitObjects(t, ns, dir, "the complete app status", func(os []objectstore.Object) bool {
				return slices.ContainsFunc(os, func(o objectstore.Object) bool { return path.Base(o.Key) == "appstatus_"+appID })
			})
			t.Logf("Spark %s: complete app status in the store %v after the pod succeeded; %s", d.Version, time.Since(ended).Round(time.Millisecond), describe(objects))
			events := eventFiles(t, objects, appID)
			if len(events) < 2 {
				t.Errorf("%d event files, want the log rolled at 10m into at least 2: %s", len(events), describe(objects))
			}
			for _, o := range objects {
				if strings.HasSuffix(o.Key, ".inprogress") {
					t.Errorf("%s left in the store after a clean stop", o.Key)
				}
			}
			last := readEvents(t, events[len(events)-1])
			if !bytes.Contains(last, []byte(`"Event":"SparkListenerApplicationEnd"`)) {
				t.Errorf("the last event file %s has no SparkListenerApplicationEnd: the log is not complete", events[len(events)-1])
			}
			checkExecutorLogURL(t, readEvents(t, events[0]), ns, appID)
		})
	}
}

// TestEventLogsDriverKilled kills the driver JVM with SIGKILL mid-job,
// after its log has rolled: the rolled files are in the store before the
// kill, and the last one, as the JVM left it, soon after, with the app
// status still in progress (the application never ended).
func TestEventLogsDriverKilled(t *testing.T) {
	t.Parallel()
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			ns, appID := startEventLogJob(t, d, eventLogJob(120000))
			waitFor(t, ns, "padded its event log", 4*time.Minute, func() bool {
				return strings.Contains(log(ns, sleepyDriver, "spark"), "eventlogs: padded")
			})
			dir := historyPrefix + "eventlog_v2_" + appID + "/"
			pid := containerProcess(t, ns, sleepyDriver, "spark", "java")
			local, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "root", patches.EventLogDir, "eventlog_v2_"+appID))
			if err != nil {
				t.Fatal(err)
			}
			var written []string
			for _, e := range local {
				if strings.HasPrefix(e.Name(), "events_") {
					written = append(written, e.Name())
				}
			}
			rolled := waitObjects(t, ns, dir, "the rolled event files", func(os []objectstore.Object) bool {
				return len(eventFilesOf(os, appID)) >= len(written)-1
			})
			if len(written) < 2 {
				t.Fatalf("the JVM wrote %q: the log never rolled", written)
			}
			if n := len(eventFilesOf(rolled, appID)); n != len(written)-1 {
				t.Errorf("before the kill the store holds %d event files (%s), want the %d rolled ones of %q", n, describe(rolled), len(written)-1, written)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			objects := waitObjects(t, ns, dir, "the last event file", func(os []objectstore.Object) bool {
				return len(eventFilesOf(os, appID)) == len(written)
			})
			t.Logf("Spark %s: last event file in the store %v after SIGKILL; %s", d.Version, time.Since(killed).Round(time.Millisecond), describe(objects))
			if !slices.ContainsFunc(objects, func(o objectstore.Object) bool { return path.Base(o.Key) == "appstatus_"+appID+".inprogress" }) {
				t.Errorf("no in-progress app status in the store: %s", describe(objects))
			}
			if slices.ContainsFunc(objects, func(o objectstore.Object) bool { return path.Base(o.Key) == "appstatus_"+appID }) {
				t.Errorf("a complete app status for an application that never ended: %s", describe(objects))
			}
			waitPod(t, ns, sleepyDriver, "finished", time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
		})
	}
}

// checkExecutorLogURL checks that the executor's SparkListenerExecutorAdded
// event carries the link testdata/policy.yaml's logs.executorURL makes of
// its attributes: its namespace, pod name, application and executor id.
func checkExecutorLogURL(t *testing.T, events []byte, ns, appID string) {
	t.Helper()
	for _, line := range bytes.Split(events, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"Event":"SparkListenerExecutorAdded"`)) {
			continue
		}
		var added struct {
			ID   string `json:"Executor ID"`
			Info struct {
				LogURLs map[string]string `json:"Log Urls"`
			} `json:"Executor Info"`
		}
		if err := json.Unmarshal(line, &added); err != nil {
			t.Fatal(err)
		}
		prefix := "https://logs.example.com/" + ns + "/"
		want := "?app=" + appID + "&exec=" + added.ID
		if u := added.Info.LogURLs["log"]; !strings.HasPrefix(u, prefix) || !strings.HasSuffix(u, want) || strings.Contains(u, "{{") {
			t.Errorf("executor %s's log links %v, want {\"log\": \"%s<pod>%s\"}", added.ID, added.Info.LogURLs, prefix, want)
		}
		return
	}
	t.Errorf("no SparkListenerExecutorAdded in the first event file")
}

// checkNoCredential checks that the running JVM has no storage credential
// in its environment, its command line or its conf, and no Secret files
// in its mount namespace, while the sidecar has them there.
func checkNoCredential(t *testing.T, ns string) {
	t.Helper()
	jvm := strconv.Itoa(containerProcess(t, ns, sleepyDriver, "spark", "java"))
	sidecar := strconv.Itoa(containerProcess(t, ns, sleepyDriver, patches.SidecarName, "sparklet-sideca"))
	secretFile := func(pid string) string {
		return inRoot(pid, path.Join(patches.HistoryCredentialDir, "AWS_SECRET_ACCESS_KEY"))
	}
	if data, err := os.ReadFile(secretFile(sidecar)); err != nil || strings.TrimSpace(string(data)) != store.SecretKey {
		t.Fatalf("the sidecar's %s: %v; the check below could not fail", secretFile(sidecar), err)
	}
	if _, err := os.Stat(secretFile(jvm)); !os.IsNotExist(err) {
		t.Errorf("the JVM sees %s (%v)", secretFile(jvm), err)
	}
	for _, f := range []string{filepath.Join("/proc", jvm, "environ"), filepath.Join("/proc", jvm, "cmdline"), inRoot(jvm, path.Join(patches.ConfDir, patches.ConfFile))} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read the JVM's %s: %v", f, err)
		}
		for what, v := range map[string]string{"secret key": store.SecretKey, "access key id": store.AccessKey} {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("the JVM's %s holds the store's %s", f, what)
			}
		}
	}
}

// inRoot is p as the process pid sees it, through /proc/<pid>/root, with
// the symbolic links on the way resolved in that root (/var/run is a link
// to /run, which the kernel would resolve in the reader's root).
func inRoot(pid, p string) string {
	root := filepath.Join("/proc", pid, "root")
	resolved := "/"
	parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	for hops := 0; len(parts) > 0 && hops < 40; {
		next := path.Join(resolved, parts[0])
		parts = parts[1:]
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			resolved = next
			continue
		}
		hops++
		if !path.IsAbs(target) {
			target = path.Join(resolved, target)
		}
		parts = append(strings.Split(strings.TrimPrefix(path.Clean(target), "/"), "/"), parts...)
		resolved = "/"
	}
	return filepath.Join(root, resolved)
}

// waitObjects polls the store's listing under dir until cond holds.
func waitObjects(t *testing.T, ns, dir, what string, cond func([]objectstore.Object) bool) []objectstore.Object {
	t.Helper()
	var objects []objectstore.Object
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var err error
		objects, err = store.List(context.Background(), historyBucket, dir)
		if err == nil && cond(objects) {
			return objects
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s in the store under %s within 2m (%v): %s\n%s", what, dir, err, describe(objects), "sidecar log:\n"+log(ns, sleepyDriver, patches.SidecarName))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventFilesOf are the keys of the log's event files, by index.
func eventFilesOf(objects []objectstore.Object, appID string) []string {
	return objectstore.EventFiles(objects, appID)
}

// eventFiles are eventFilesOf, numbered 1, 2, ... with none missing.
func eventFiles(t *testing.T, objects []objectstore.Object, appID string) []string {
	t.Helper()
	files := eventFilesOf(objects, appID)
	for i, key := range files {
		if !strings.HasPrefix(path.Base(key), "events_"+strconv.Itoa(i+1)+"_") {
			t.Fatalf("event files %q: want events_1, events_2, ... with none missing", files)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no event files: %s", describe(objects))
	}
	return files
}

// readEvents reads an event file, decompressed.
func readEvents(t *testing.T, key string) []byte {
	t.Helper()
	data, err := store.ReadEvents(context.Background(), historyBucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func describe(objects []objectstore.Object) string { return objectstore.Describe(objects) }
