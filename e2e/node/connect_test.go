package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// connectQuery is a Spark Connect client: a DataFrame query with a shuffle
// (groupBy count over 4 partitions) against the server in argv[1],
// carrying as its bearer token the file argv[2] names, if any. It prints
// RESULT and the counts, or ERROR and what the server said.
const connectQuery = `import sys, urllib.parse
from pyspark.sql import SparkSession, functions as F
url = sys.argv[1]
if len(sys.argv) > 2:
    with open(sys.argv[2]) as f:
        url += ";authorization=" + urllib.parse.quote("Bearer " + f.read().strip())
try:
    spark = SparkSession.builder.remote(url).getOrCreate()
    rows = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count().orderBy("k").collect()
    print("RESULT " + ",".join("%d:%d" % (r["k"], r["count"]) for r in rows))
except Exception as e:
    print("ERROR " + " ".join(str(e).split()))
`

// connectAnswer is what connectQuery prints when the query runs.
const connectAnswer = "RESULT 0:334,1:333,2:333"

// connectServer runs examples/connect-deployment.yaml (stock 4.3.0) in
// the opted-in namespace ns as a notebook user's platform would, on the
// real node, and connects to it with the official Python client
// (hack/connect-client):
//   - from client pods, through the Service the sidecar made, by its DNS
//     name (CoreDNS) and ClusterIP (kube-proxy), each with its own
//     ServiceAccount's projected token: a ServiceAccount a Role allows runs
//     the query, another gets PERMISSION_DENIED, a pod without a token
//     UNAUTHENTICATED;
//   - from the host through `kubectl port-forward svc/...`, as a laptop does.
//
// Then `kubectl rollout restart`: the kubelet sends the old JVM SIGTERM,
// it stops its SparkContext, the old pod's executors go and the new pod
// serves the next query.
func connectServer(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	site := fixtures.ConnectClientSite(t)
	example, err := os.ReadFile("../../examples/connect-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The node has two cores.
	manifest := strings.Replace(string(example), `requests: {cpu: "1", memory: 2Gi}`, `requests: {cpu: 200m, memory: 2Gi}`, 1)
	manifest = strings.Replace(manifest, "spark.executor.instances 2\n", "spark.executor.instances 2\n          spark.kubernetes.executor.request.cores 100m\n", 1)
	for _, sa := range []string{"analyst", "intruder"} {
		kubectl(ctx, t, "-n", ns, "create", "serviceaccount", sa)
	}
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: spark-connect-user}
rules:
- {apiGroups: [sparklet.io], resources: [sparkconnect], verbs: [create]}
`))
	kubectl(ctx, t, "-n", ns, "create", "rolebinding", "spark-connect-analyst", "--role=spark-connect-user", "--serviceaccount="+ns+":analyst")

	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(manifest))
	t.Cleanup(func() {
		_, _ = exec.Command("kubectl", "--kubeconfig", cp.Kubeconfig(), "-n", ns, "delete", "deployment", "spark-connect", "--wait=false").CombinedOutput()
	})
	first := connectServing(ctx, t, ns, "")
	const service = "spark-connect-connect"
	if got, want := first.Annotations[vocab.AnnotationConnectURL], "sc://"+service+"."+ns+".svc:15002"; got != want {
		t.Errorf("%s=%q, want %q", vocab.AnnotationConnectURL, got, want)
	}

	inCluster := "sc://" + service + "." + ns + ".svc:15002/"
	got := connectClientPod(ctx, t, ns, site, "analyst", inCluster)
	if got != connectAnswer {
		t.Fatalf("the allowed ServiceAccount's client pod printed %q, want %q", got, connectAnswer)
	}
	t.Logf("kubectl apply of the Deployment to the first query's result from a client pod: %s", time.Since(start).Round(100*time.Millisecond))
	for _, c := range []struct{ sa, says string }{
		{"intruder", "system:serviceaccount:" + ns + ":intruder may not create sparkconnect.sparklet.io in namespace " + ns},
		{"", "no Kubernetes token"},
	} {
		if got := connectClientPod(ctx, t, ns, site, c.sa, inCluster); !strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, c.says) {
			t.Errorf("client pod as %q: printed %q, want an error saying %q", c.sa, got, c.says)
		}
	}

	// A laptop: kubectl port-forward to the Service, the client's token= to
	// localhost.
	local, forwarder := portForward(ctx, t, ns, "svc/"+service, 15002)
	// The client sends token= in the clear only to the host name localhost
	// (DefaultChannelBuilder, pyspark 4.2.0), not to 127.0.0.1.
	_, port, _ := strings.Cut(local, ":")
	if got := hostConnectClient(ctx, t, site, "sc://localhost:"+port+"/;token="+serviceAccountToken(ctx, t, ns, "analyst")); got != connectAnswer {
		t.Errorf("the host's client through kubectl port-forward printed %q, want %q\nkubectl port-forward said:\n%s", got, connectAnswer, forwarder)
	}

	// A rollout: the old pod's JVM stops cleanly and its executors go.
	oldApp := jvmApp(ctx, t, ns, first.Name)
	logs := followLog(ctx, ns, first.Name, "spark")
	rolled := time.Now()
	kubectl(ctx, t, "-n", ns, "rollout", "restart", "deployment/spark-connect")
	second := connectServing(ctx, t, ns, first.Name)
	waitPodGone(ctx, t, ns, first.Name)
	waitExecutorsGone(ctx, t, ns, oldApp)
	if stopped := "Successfully stopped SparkContext"; !strings.Contains(logs.wait(t), stopped) {
		t.Errorf("the old server's log does not say %q: the kubelet's SIGTERM did not stop its JVM cleanly\n%s", stopped, tail(logs.wait(t), 30))
	}
	t.Logf("rollout restart to the new pod serving and nothing of %s (application %s) left: %s", first.Name, oldApp, time.Since(rolled).Round(100*time.Millisecond))
	if got := connectClientPod(ctx, t, ns, site, "analyst", inCluster); got != connectAnswer {
		t.Errorf("after the rollout, the allowed client pod printed %q, want %q (server %s)", got, connectAnswer, second.Name)
	}
}

// connectServing waits until the Deployment has one pod other than not
// whose Spark container runs, whose Connect Service lists it as an
// endpoint, and whose server has started, and returns it.
func connectServing(ctx context.Context, t *testing.T, ns, not string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spark-connect"})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.Name == not || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Annotations[vocab.AnnotationConnectURL] == "" {
				continue
			}
			pod = p
			data, err := cp.Client().CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "spark"}).DoRaw(ctx)
			return err == nil && strings.Contains(string(data), "Spark Connect server started at"), nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no pod of the Deployment (other than %q) serving Spark Connect: %v\nstatus: %+v", not, err, podStatus(pod))
	}
	return pod
}

// connectClientPod runs connectQuery in a pod of ns as ServiceAccount sa
// (no token at all when sa is empty) against url, and returns what it
// printed. The pod runs the client from the host's installation
// (hack/connect-client) with the Spark image's python3 (its SPARK_HOME
// lets pyspark take a -c program).
func connectClientPod(ctx context.Context, t *testing.T, ns, site, sa, url string) string {
	t.Helper()
	name, account, tokenArg := "connect-client-none", "default", ""
	automount := "false"
	if sa != "" {
		name, account, tokenArg, automount = "connect-client-"+sa, sa, `, /var/run/secrets/kubernetes.io/serviceaccount/token`, "true"
	}
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  serviceAccountName: %s
  automountServiceAccountToken: %s
  restartPolicy: Never
  containers:
  - name: client
    image: apache/spark:4.3.0-python3
    command: [python3, -W, ignore, -c, %q, %q%s]
    env: [{name: PYTHONPATH, value: /client}, {name: HOME, value: /tmp}]
    volumeMounts: [{name: client, mountPath: /client, readOnly: true}]
    resources:
      requests: {cpu: 100m, memory: 512Mi}
      limits: {memory: 512Mi}
  volumes: [{name: client, hostPath: {path: %q, type: Directory}}]
`, name, account, automount, connectQuery, url, tokenArg, site)
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(pod))
	defer func() { _ = cp.Client().CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	// The client imports pyspark's Connect client (pandas, pyarrow, grpc)
	// in a pod asking 100m: seconds on a quiet node, minutes beside
	// other suites' JVMs.
	var done *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		done = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		out, _ := cp.Client().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "client"}).DoRaw(context.Background())
		t.Fatalf("client pod %s never ended: %v\nstatus: %+v\nits log so far:\n%s", name, err, podStatus(done), tail(string(out), 20))
	}
	out := podLogs(ctx, t, ns, name, "client")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "RESULT ") || strings.HasPrefix(line, "ERROR ") {
			return line
		}
	}
	t.Fatalf("client pod %s (%s) printed no result:\n%s", name, done.Status.Phase, tail(out, 40))
	return ""
}

// hostConnectClient runs connectQuery on the host against url, from a
// file: pyspark takes a `python3 -c` program without SPARK_HOME for its
// doctests (pyspark/sql/connect/utils.py, 4.2.0).
func hostConnectClient(ctx context.Context, t *testing.T, site, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(script, []byte(connectQuery), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "python3", "-W", "ignore", script, url)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "RESULT ") || strings.HasPrefix(line, "ERROR ") {
			return line
		}
	}
	t.Fatalf("the host's client printed no result (%v):\n%s", err, tail(string(out), 40))
	return ""
}

// serviceAccountToken is a token of sa from the TokenRequest API, what
// `kubectl create token` prints.
func serviceAccountToken(ctx context.Context, t *testing.T, ns, sa string) string {
	t.Helper()
	exp := int64(600)
	tr, err := cp.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// jvmApp is the application id of the executors the pod's current JVM
// runs (spark-app-selector, set by Spark), waiting for one to exist.
func jvmApp(ctx context.Context, t *testing.T, ns, pod string) string {
	t.Helper()
	var app string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
		if err != nil {
			return false, nil
		}
		for _, p := range list.Items {
			for _, o := range p.OwnerReferences {
				if o.Name == pod && p.DeletionTimestamp == nil {
					app = p.Labels[vocab.LabelAppID]
					return app != "", nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no executor of %s's JVM: %v", pod, err)
	}
	return app
}

// waitPodGone waits until the pod is deleted.
func waitPodGone(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never went: %v", ns, name, err)
	}
}

// streamedLog is a container's log followed through the kubelet until the
// container ends.
type streamedLog struct {
	done chan struct{}
	text strings.Builder
}

// followLog follows the container's log from its start.
func followLog(ctx context.Context, ns, pod, container string) *streamedLog {
	l := &streamedLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		rc, err := cp.Client().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
		if err != nil {
			fmt.Fprintf(&l.text, "following the log: %v", err)
			return
		}
		defer rc.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := rc.Read(buf)
			l.text.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return l
}

// wait returns the log once the container has ended.
func (l *streamedLog) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(time.Minute):
		t.Fatal("the followed log did not end within a minute of the pod going")
	}
	return l.text.String()
}
