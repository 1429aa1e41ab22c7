package realspark

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// connectHolder opens a session, runs the query, then waits until the
// file argv[2] exists, runs it again and stops the session
// (SparkSession.stop sends ReleaseSession).
const connectHolder = `import sys, os, time
from pyspark.sql import SparkSession, functions as F
def query(spark):
    rows = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count().orderBy("k").collect()
    return ",".join("%d:%d" % (r["k"], r["count"]) for r in rows)
try:
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    print("RESULT " + query(spark), flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.1)
    print("RESULT " + query(spark), flush=True)
    spark.stop()
    print("STOPPED", flush=True)
except Exception as e:
    print("ERROR " + " ".join(str(e).split()), flush=True)
`

// TestConnectLimits runs examples/connect-deployment.yaml on the newest
// pin in a namespace whose policy (testdata/policy.yaml) allows one
// session per server, closes sessions idle for 45 s and gives Connect
// servers dynamic allocation down to zero executors. A second client's
// session is refused with RESOURCE_EXHAUSTED while the first one's runs
// queries; once the first stops its session the second gets in. The JVM
// killed, its sessions no longer count. Idle, the server's executors go
// to zero and Spark closes the last session, which the sidecar stops
// counting.
func TestConnectLimits(t *testing.T) {
	t.Parallel() // waits on Spark's timers; see doc.go
	d := dists[len(dists)-1]
	site := fixtures.ConnectClientSite(t)
	ns, pod := startConnectServer(t, d, []string{"first", "second"}, nil)
	conf := pod.Annotations[vocab.AnnotationEffectiveConf]
	for _, want := range []string{"spark.dynamicAllocation.enabled true", policy.KeySessionTimeout + " 45000ms"} {
		if !strings.Contains(conf, want) {
			t.Errorf("the effective conf has no %q:\n%s", want, conf)
		}
	}
	server := "sc://" + pod.Status.PodIP + ":15002/;authorization="
	first, second := "system:serviceaccount:"+ns+":first", "system:serviceaccount:"+ns+":second"

	release := filepath.Join(t.TempDir(), "release")
	firstURL := server + url.PathEscape("Bearer "+bearer(t, ns, "first"))
	holder := startConnectHolder(t, site, firstURL, release)
	const want = "RESULT 0:334,1:333,2:333"
	if got := holder.next(t, 4*time.Minute); got != want {
		t.Fatalf("the first client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	app := waitConnectApp(t, ns, pod.Name, pod.Labels[vocab.LabelAppID], "", 1)

	secondURL := server + url.PathEscape("Bearer "+bearer(t, ns, "second"))
	got := runConnectClient(t, site, secondURL)
	if says := "holds its limit of 1 sessions (the sparklet policy's connect.maxSessions): " + first + " has 1"; !strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, says) {
		t.Fatalf("the second client, over the limit, printed %q, want an error saying %q", got, says)
	}
	t.Logf("over the limit: %s", got)
	metrics := sidecarMetrics(t, pod)
	for _, want := range []string{
		// The client's every call is refused (it sends several).
		`sparklet_sidecar_connect_requests_total{code="RESOURCE_EXHAUSTED",user="` + second + `"} `,
		`sparklet_sidecar_connect_sessions_open{user="` + first + `"} 1`,
		`sparklet_sidecar_connect_operations_total{user="` + first + `"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the sidecar's metrics have no %s", want)
		}
	}
	if refusedOK := `sparklet_sidecar_connect_requests_total{code="OK",user="` + second + `"}`; strings.Contains(metrics, refusedOK) {
		t.Errorf("the sidecar forwarded a call of the client over the limit: %s", grepLines(metrics, refusedOK))
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := holder.next(t, 2*time.Minute); got != want {
		t.Fatalf("the first client's second query printed %q, want %q", got, want)
	}
	if got := holder.next(t, time.Minute); got != "STOPPED" {
		t.Fatalf("the first client printed %q, want STOPPED", got)
	}
	if got := runConnectClient(t, site, secondURL); got != want {
		t.Fatalf("after the first session was released, the second client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	secondDone := time.Now()

	// The JVM killed takes the second client's session with it: once the
	// container restarted, the first client gets in although that session
	// has not been idle for the timeout.
	killJVM(t, ns, pod.Name, app, "Spark "+d.Version+": the first JVM's executors")
	waitServerStarted(t, ns, pod.Name, 2)
	if got := runConnectClient(t, site, firstURL); got != want {
		t.Fatalf("after the JVM restarted, the first client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	t.Logf("after the JVM restarted, a new session's query done %v after the old JVM's last session's last call (idle timeout 45s)",
		time.Since(secondDone).Round(time.Second))
	forgot := grepLines(log(ns, pod.Name, "sparklet-sidecar"), `{`)
	if !strings.Contains(forgot, `"msg":"Spark Connect sessions forgotten: the JVM that held them ended","sessions":1,`) {
		t.Errorf("the sidecar's log does not say it forgot the killed JVM's one session")
	}
	idleFrom := time.Now()
	app = waitConnectApp(t, ns, pod.Name, pod.Labels[vocab.LabelAppID], app, 1)

	// Idle: the new JVM's executors go (executorIdleTimeout and shuffle
	// tracking's timeout, 20 s), and Spark's session maintenance (every
	// 30 s) closes the first client's new session 45 s after its last
	// call.
	waitForPod(t, ns, pod.Name, "no executor of "+app+" left", 3*time.Minute, func() bool {
		list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
			LabelSelector: vocab.LabelAppID + "=" + app + "," + vocab.LabelRole + "=executor"})
		return err == nil && len(list.Items) == 0
	})
	t.Logf("Spark %s: the server's executors all gone %v after the last query", d.Version, time.Since(idleFrom).Round(time.Second))
	waitForPod(t, ns, pod.Name, "Spark closing the idle session", 3*time.Minute, func() bool {
		return strings.Contains(log(ns, pod.Name, "spark"), "that expired and will be closed")
	})
	t.Logf("Spark %s: Spark closed the idle session %v after its last call", d.Version, time.Since(idleFrom).Round(time.Second))
	// The sidecar's clock starts at the end of the session's last call,
	// Spark's at its start: the gauge empties within moments of Spark's
	// close.
	var m string
	waitForPod(t, ns, pod.Name, "the sidecar counting no open session", time.Minute, func() bool {
		m = sidecarMetrics(t, pod)
		return !strings.Contains(m, "sparklet_sidecar_connect_sessions_open{")
	})
	t.Logf("the sidecar's counts: %s", strings.ReplaceAll(grepLines(m, "sparklet_sidecar_connect_"), "\n", "; "))
}

// connectHolderProc is a running connectHolder and the lines it prints.
type connectHolderProc struct{ lines chan string }

func startConnectHolder(t *testing.T, site, url, release string) *connectHolderProc {
	t.Helper()
	file := filepath.Join(t.TempDir(), "holder.py")
	if err := os.WriteFile(file, []byte(connectHolder), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cmd := exec.CommandContext(ctx, "python3", "-W", "ignore", file, url, release)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	h := &connectHolderProc{lines: make(chan string, 16)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "RESULT ") || strings.HasPrefix(l, "ERROR ") || l == "STOPPED" {
				h.lines <- l
			}
		}
	}()
	return h
}

// next is the holder's next line, or a failure after timeout.
func (h *connectHolderProc) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("the first client ended without a line")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("the first client printed nothing in %v", timeout)
	}
	return ""
}

// sidecarMetrics scrapes the sidecar's metrics port on the pod IP.
func sidecarMetrics(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(policy.DefaultSidecarMetricsPort))) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
