package realspark

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/vocab"
)

// TestHistoryServer runs a job whose event log the sidecar ships into the
// store, then Spark's own HistoryServer of the same version reads it
// through `sparklet history-sync`, which mirrors the bucket into a
// directory the server reads as file: (the chart's history server, as
// host processes on loopback): the server lists the application as
// completed and serves its jobs page with the job's 25 jobs. The driver
// pod carries the page's URL on the policy's history.url.
func TestHistoryServer(t *testing.T) {
	t.Parallel()
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			ns, appID := startEventLogJob(t, d, eventLogJob(100))
			done := waitPod(t, ns, sleepyDriver, "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			page := "https://history.example.com/history/" + appID + "/jobs/"
			if got := done.Annotations[vocab.AnnotationHistoryURL]; got != page {
				t.Errorf("%s = %q, want %q", vocab.AnnotationHistoryURL, got, page)
			}
			checkHistoryURLEvent(t, ns, page)

			dir := t.TempDir()
			start := time.Now()
			startHistorySync(t, dir)
			base := startHistoryServer(t, d, dir)
			waitHistory(t, base, dir, "the application listed as completed", func() bool {
				return listsCompleted(base, appID)
			})
			listed := time.Since(start).Round(time.Millisecond)
			jobs := getPage(t, base+"/history/"+appID+"/jobs/")
			for _, want := range []string{"eventlogs - Spark Jobs", "Completed Jobs (25)", "count at"} {
				if !strings.Contains(jobs, want) {
					t.Errorf("the jobs page of %s lacks %q:\n%s", appID, want, tail(jobs, 60))
				}
			}
			t.Logf("Spark %s: the history server listed %s as completed %v after history-sync and the server started", d.Version, appID, listed)
		})
	}
}

// checkHistoryURLEvent checks the sidecar's HistoryURL Event names page.
func checkHistoryURLEvent(t *testing.T, ns, page string) {
	t.Helper()
	evs, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + sleepyDriver})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "HistoryURL" && strings.Contains(e.Message, page) {
			return
		}
	}
	t.Errorf("no HistoryURL Event naming %s among %d Events", page, len(evs.Items))
}

// startHistorySync runs `sparklet history-sync` from SPARKLET_BIN_DIR
// against the suite's store, into dir, with the store's credential in a
// directory of files as the chart mounts its Secret.
func startHistorySync(t *testing.T, dir string) {
	t.Helper()
	creds := t.TempDir()
	if err := store.WriteCredentials(creds); err != nil {
		t.Fatal(err)
	}
	spawn(t, "history-sync", filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet"), "history-sync",
		"--endpoint", store.Endpoint, "--bucket", historyBucket, "--prefix", strings.TrimSuffix(historyPrefix, "/"),
		"--credential-dir", creds, "--dir", dir, "--interval", "1s")
}

// spawn runs a process of the test's, with its log in a file of the test's
// that a failed test shows, until the test ends; done is closed if it
// exits before.
func spawn(t *testing.T, name, bin string, args ...string) (done <-chan struct{}, logFile string) {
	t.Helper()
	logFile = filepath.Join(t.TempDir(), name+".log")
	cmd, done, err := cluster.Spawn(bin, args, logFile, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cluster.Terminate(cmd.Process.Pid, done)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, cluster.Tail(logFile, 40))
		}
	})
	return done, logFile
}

// startHistoryServer runs Spark's HistoryServer from d's distribution,
// bound to 127.0.0.1 (SPARK_LOCAL_IP, which WebUI.bind reads, 3.5.9 to
// 4.3.0), reading dir, and returns its base URL once it answers.
func startHistoryServer(t *testing.T, d spark.Dist, dir string) string {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	home := d.Home(os.Getenv("SPARKLET_BIN_DIR"))
	// As the chart starts it: its properties in a file.
	conf := filepath.Join(t.TempDir(), "spark-history.conf")
	props := "spark.history.fs.logDirectory=file:" + dir + "\nspark.history.ui.port=" + strconv.Itoa(port) +
		"\nspark.history.fs.update.interval=1s\nspark.port.maxRetries=0\n"
	if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	done, logFile := spawn(t, "history-server", "/usr/bin/env", "SPARK_HOME="+home, "SPARK_CONF_DIR="+t.TempDir(),
		"SPARK_LOCAL_IP=127.0.0.1", "SPARK_DAEMON_MEMORY=512m",
		filepath.Join(home, "bin", "spark-class"), "org.apache.spark.deploy.history.HistoryServer", "--properties-file", conf)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHistory(t, base, dir, "the history server answering", func() bool {
		select {
		case <-done:
			t.Fatalf("the history server exited:\n%s", cluster.Tail(logFile, 40))
		default:
		}
		resp, err := http.Get(base + "/api/v1/applications")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// listsCompleted tells whether the server's application list has appID
// with a completed attempt.
func listsCompleted(base, appID string) bool {
	resp, err := http.Get(base + "/api/v1/applications")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var apps []struct {
		ID       string `json:"id"`
		Attempts []struct {
			Completed bool `json:"completed"`
		} `json:"attempts"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&apps) != nil {
		return false
	}
	for _, a := range apps {
		if a.ID == appID && len(a.Attempts) > 0 && a.Attempts[0].Completed {
			return true
		}
	}
	return false
}

// waitHistory polls cond for up to 3 minutes, and fails with what the
// server lists and the mirror holds.
func waitHistory(t *testing.T, base, dir, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			var listed string
			if resp, err := http.Get(base + "/api/v1/applications"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				listed = string(b)
			}
			var files []string
			_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
				files = append(files, strings.TrimPrefix(p, dir))
				return nil
			})
			t.Fatalf("never %s within 3m; the server lists %s; the mirror holds %q", what, listed, files)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getPage reads one page of the server.
func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, tail(string(b), 60))
	}
	return string(b)
}
