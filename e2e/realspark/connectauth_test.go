package realspark

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// connectClient is a Spark Connect client session: a DataFrame query with
// a shuffle (groupBy count over 4 partitions), or the error it got.
const connectClient = `import sys
from pyspark.sql import SparkSession, functions as F
try:
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    rows = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count().orderBy("k").collect()
    print("RESULT " + ",".join("%d:%d" % (r["k"], r["count"]) for r in rows))
except Exception as e:
    print("ERROR " + " ".join(str(e).split()))
`

// TestConnectAuth runs examples/connect-deployment.yaml on the newest pin
// and connects to the sidecar's Spark Connect port with the official
// Python client (hack/connect-client): a ServiceAccount that a Role
// allows to create sparkconnect.sparklet.io runs a query with a shuffle on
// the server's executors; another ServiceAccount is refused with
// PERMISSION_DENIED and a client without a token with UNAUTHENTICATED,
// each with the sidecar's message. Tokens come from the TokenRequest API.
// After the JVM is killed and restarts in place, the allowed client's next
// session runs its query again.
func TestConnectAuth(t *testing.T) {
	d := dists[len(dists)-1]
	site := fixtures.ConnectClientSite(t)
	ns, pod := startConnectServer(t, d, []string{"analyst"}, []string{"intruder"})
	server := "sc://" + pod.Status.PodIP + ":15002/"
	pid, jvmToken := checkJVMBehindSidecar(t, ns, pod)

	start := time.Now()
	analyst := bearer(t, ns, "analyst")
	got := runConnectClient(t, site, server+";authorization="+url.PathEscape("Bearer "+analyst))
	const want = "RESULT 0:334,1:333,2:333"
	if got != want {
		t.Fatalf("the allowed client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	t.Logf("Spark %s: the allowed client's session and query with a shuffle took %v through the sidecar", d.Version, time.Since(start).Round(time.Millisecond))

	checkRefused(t, site, ns, server)
	side := log(ns, pod.Name, "sparklet-sidecar")
	for _, want := range []string{`"msg":"Spark Connect session opened"`, `"user":"system:serviceaccount:` + ns + `:analyst"`, `"code":"PERMISSION_DENIED"`} {
		if !strings.Contains(side, want) {
			t.Errorf("the sidecar's log does not have %s", want)
		}
	}

	// From inside the pod, as kubectl port-forward reaches it: the Python
	// client sends token= in the clear to localhost only. The same calls
	// straight to the JVM and through the sidecar, taking turns.
	got = runInPod(t, site, pid, connectLatency, "sc://localhost:"+strconv.Itoa(patches.ConnectJVMPort)+"/;token="+jvmToken,
		"sc://localhost:15002/;token="+analyst)
	if !strings.HasPrefix(got, "LATENCY ") {
		t.Fatalf("the latency client printed %q", got)
	}
	t.Logf("Spark %s, median per call: %s", d.Version, strings.TrimPrefix(got, "LATENCY "))

	// The JVM killed: the container restarts in place, the new JVM reads
	// the same token, and the sidecar forwards a new session to it.
	first := waitConnectApp(t, ns, pod.Name, pod.Labels[vocab.LabelAppID], "", 2)
	killJVM(t, ns, pod.Name, first, "Spark "+d.Version+": the first JVM's executors")
	waitServerStarted(t, ns, pod.Name, 2)
	if got := runConnectClient(t, site, server+";authorization="+url.PathEscape("Bearer "+analyst)); got != want {
		t.Fatalf("after the JVM restarted, the allowed client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
}

// checkRefused connects to server with the token of ServiceAccount
// intruder, which no Role allows, and with none: the client gets
// PERMISSION_DENIED and UNAUTHENTICATED with the sidecar's message.
func checkRefused(t *testing.T, site, ns, server string) {
	t.Helper()
	for _, c := range []struct{ who, url, says string }{
		{"intruder", server + ";authorization=" + url.PathEscape("Bearer "+bearer(t, ns, "intruder")),
			"system:serviceaccount:" + ns + ":intruder may not create sparkconnect.sparklet.io in namespace " + ns},
		{"no token", server, "no Kubernetes token"},
	} {
		got := runConnectClient(t, site, c.url)
		if !strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, c.says) {
			t.Errorf("%s: the client printed %q, want an error saying %q", c.who, got, c.says)
		}
		t.Logf("%s: %s", c.who, got)
	}
}

// startConnectServer runs examples/connect-deployment.yaml of d in the
// test's namespace, with ServiceAccounts allowed to connect (bound to a
// Role that may create sparkconnect.sparklet.io, what a platform grants a
// notebook user, docs/connect.md) and others that are not, and returns the
// namespace and the server's pod once the server started and the pod has
// an IP.
func startConnectServer(t *testing.T, d spark.Dist, allowed, others []string) (string, *corev1.Pod) {
	t.Helper()
	return startConnectManifest(t, example(t, "connect-deployment.yaml", d), allowed, others)
}

// startConnectManifest is startConnectServer with the Deployment's
// manifest given.
func startConnectManifest(t *testing.T, manifest []byte, allowed, others []string) (string, *corev1.Pod) {
	t.Helper()
	ns := deployConnectManifest(t, manifest, allowed, others)
	pod := connectPod(t, ns)
	waitServerStarted(t, ns, pod.Name, 1)
	return ns, waitPod(t, ns, pod.Name, "had an IP", time.Minute, func(p *corev1.Pod) bool { return p.Status.PodIP != "" })
}

// deployConnectServer applies examples/connect-deployment.yaml of d in the
// test's namespace with the ServiceAccounts and the Role of
// startConnectServer, and returns the namespace.
func deployConnectServer(t *testing.T, d spark.Dist, allowed, others []string) string {
	t.Helper()
	return deployConnectManifest(t, example(t, "connect-deployment.yaml", d), allowed, others)
}

// deployConnectManifest is deployConnectServer with the Deployment's
// manifest given.
func deployConnectManifest(t *testing.T, manifest []byte, allowed, others []string) string {
	t.Helper()
	ns := namespace(t)
	ctx := context.Background()
	grantReviews(t, ns)
	for _, sa := range append(append([]string(nil), allowed...), others...) {
		if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// kubectl create role checks resources against discovery, which does
	// not serve this one.
	kubectl(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: spark-connect-user}
rules:
- {apiGroups: [sparklet.io], resources: [sparkconnect], verbs: [create]}
`), "apply", "-n", ns, "-f", "-")
	args := []string{"create", "rolebinding", "connect-users", "-n", ns, "--role=spark-connect-user"}
	for _, sa := range allowed {
		args = append(args, "--serviceaccount="+ns+":"+sa)
	}
	kubectl(t, nil, args...)

	kubectl(t, manifest, "apply", "-n", ns, "-f", "-")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), nil, "delete", "deployment", "spark-connect", "-n", ns, "--wait=false")
	})
	return ns
}

// connectLatency times small calls in two sessions, straight to the JVM
// (argv[1]) and through the sidecar (argv[2]), taking turns and each
// going first every other round (the client releases an execution in the
// background, which the next call may wait for): the median
// of 100 AnalyzePlan (a new DataFrame's schema) and of 30 ExecutePlan
// (collecting a small range) each, after one call each to warm up.
const connectLatency = `import sys, time
from pyspark.sql import SparkSession
direct = SparkSession.builder.remote(sys.argv[1]).create()
proxied = SparkSession.builder.remote(sys.argv[2]).create()
def medians_ms(f, n):
    took = {direct: [], proxied: []}
    for i in range(n):
        for s in ((direct, proxied) if i % 2 == 0 else (proxied, direct)):
            start = time.perf_counter()
            f(s, i)
            took[s].append(time.perf_counter() - start)
    return [sorted(took[s])[n // 2] * 1000 for s in (direct, proxied)]
for s in (direct, proxied):
    s.range(1).collect()
a = medians_ms(lambda s, i: s.range(i + 1).schema, 100)
e = medians_ms(lambda s, i: s.range(i + 1).collect(), 30)
print("LATENCY AnalyzePlan %.2f ms straight to the JVM, %.2f ms through the sidecar; ExecutePlan %.2f ms, %.2f ms" % (a[0], a[1], e[0], e[1]))
`

// checkJVMBehindSidecar checks that the JVM's Connect port is on
// 127.0.0.1 only, that the JVM has the token the sidecar wrote in its env
// (from spark-env.sh), and that it refuses a call without it.
func checkJVMBehindSidecar(t *testing.T, ns string, pod *corev1.Pod) (pid int, token string) {
	t.Helper()
	jvm := net.JoinHostPort("127.0.0.1", strconv.Itoa(patches.ConnectJVMPort))
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(patches.ConnectJVMPort)), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the JVM's Connect port %d answers on the pod IP; it must listen on 127.0.0.1 only", patches.ConnectJVMPort)
	}
	pid = containerProcess(t, ns, pod.Name, "spark", "java")
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, "SPARK_CONNECT_AUTHENTICATE_TOKEN="); ok {
			token = v
		}
	}
	if len(token) != 64 {
		t.Errorf("the JVM's SPARK_CONNECT_AUTHENTICATE_TOKEN has %d characters, want the sidecar's 64", len(token))
	}
	conn := dialInNetns(t, pid, jvm)
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", "http://"+jvm+"/spark.connect.SparkConnectService/Config", bytes.NewReader(make([]byte, 5)))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a call to the JVM's Connect port in the pod: %v", err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	status := resp.Trailer.Get("Grpc-Status") + resp.Header.Get("Grpc-Status")
	if status != "16" {
		t.Errorf("the JVM answered a call without its token with grpc-status %q (%s), want 16 (UNAUTHENTICATED)", status,
			resp.Trailer.Get("Grpc-Message")+resp.Header.Get("Grpc-Message"))
	}
	return pid, token
}

// dialInNetns connects to addr from the network namespace of process pid:
// the socket is made on this goroutine's thread moved into that namespace,
// and the thread is moved back before it returns to the runtime. The
// thread must not end instead: the kernel sends a child its Pdeathsig when
// the thread that forked it ends, and the harness starts kube-apiserver
// (cluster.Spawn, on TestAPIServerRestart's thread) and the runner's
// containers with Pdeathsig SIGKILL from whatever thread it ran on.
func dialInNetns(t *testing.T, pid int, addr string) net.Conn {
	t.Helper()
	runtime.LockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer own.Close()
	pods, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer pods.Close()
	if err := unix.Setns(int(pods.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("enter the pod's network namespace: %v", err)
	}
	c, dialErr := net.DialTimeout("tcp", addr, 5*time.Second)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		// Still locked: the thread, in the pod's namespace, ends with
		// this goroutine rather than serve another.
		t.Fatalf("return to the test's network namespace: %v", err)
	}
	runtime.UnlockOSThread()
	if dialErr != nil {
		t.Fatalf("connect to %s in the pod's network namespace: %v", addr, dialErr)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// grantReviews lets the driver ServiceAccount review tokens and access,
// as the chart's connect ClusterRoleBinding does.
func grantReviews(t *testing.T, ns string) {
	t.Helper()
	_, err := env.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sparklet-connect-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: testenv.DriverServiceAccount, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), "sparklet-connect-"+ns, metav1.DeleteOptions{})
	})
}

// bearer is a token of the ServiceAccount from the TokenRequest API. The
// Python client sends token=... only over TLS to a host other than
// localhost (DefaultChannelBuilder.toChannel, pyspark 4.2.0), so to the
// pod IP it goes as an authorization parameter, which the client sends as
// gRPC metadata.
func bearer(t *testing.T, ns, sa string) string {
	t.Helper()
	exp := int64(600)
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// runConnectClient runs the client against url and returns the line it
// printed.
func runConnectClient(t *testing.T, site, url string) string {
	t.Helper()
	return runPython(t, site, connectClient, "python3", "-W", "ignore", "SCRIPT", url)
}

// runInPod runs a client script in the network namespace of process pid.
func runInPod(t *testing.T, site string, pid int, script string, urls ...string) string {
	t.Helper()
	return runInPodEnv(t, site, nil, pid, script, urls...)
}

// runPython runs args, SCRIPT standing for the script's file, and returns
// the line the script printed that starts with RESULT, ERROR or LATENCY.
func runPython(t *testing.T, site, script string, args ...string) string {
	t.Helper()
	return runPythonEnv(t, site, nil, script, args...)
}

// runPythonEnv is runPython with env added to the client's environment.
func runPythonEnv(t *testing.T, site string, env []string, script string, args ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "SCRIPT" {
			args[i] = file
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+site), env...)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "RESULT ") || strings.HasPrefix(line, "ERROR ") || strings.HasPrefix(line, "LATENCY ") {
			return line
		}
	}
	t.Fatalf("the client printed no result (%v):\n%s", err, tail(string(out), 40))
	return ""
}
