package realspark

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// TestConnect35 runs examples/connect-deployment.yaml on the Spark 3.5 pin,
// whose distribution has no Connect server: the server jar (make
// connect-jar, hack/spark/connect-jar) comes through sparklet.io/fetch
// with its sha256, as a 3.5 user lists it. The sidecar stands in front of
// the 3.5 JVM as it does of a 4.x one: from the host, with the pinned
// pyspark-client, a ServiceAccount a Role allows runs a query with a
// shuffle, another gets PERMISSION_DENIED and a client without a token
// UNAUTHENTICATED, each with the sidecar's message; from a client pod of
// the apache/spark:3.5.9 image, 3.5.9's own Python client runs the query
// with the pod's ServiceAccount token. The JVM's port 15102 answers on the
// pod IP, as docs/connect.md#spark-35 says (3.5 cannot bind 127.0.0.1),
// and its JVM has no token in its env.
func TestConnect35(t *testing.T) {
	t.Parallel()
	d := dists[0]
	if d.Major != 3 {
		t.Fatalf("the oldest pin is Spark %s, not a 3.5", d.Version)
	}
	site := fixtures.ConnectClientSite(t)
	start := time.Now()
	ns, pod := startConnectManifest(t, connectDeployment35(t, d), []string{"analyst"}, []string{"intruder"})
	t.Logf("Spark %s: the server started %v after kubectl apply", d.Version, time.Since(start).Round(time.Millisecond))
	server := "sc://" + pod.Status.PodIP + ":" + strconv.Itoa(patches.ConnectPort) + "/"

	if c, err := net.DialTimeout("tcp", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(patches.ConnectJVMPort)), 5*time.Second); err != nil {
		t.Errorf("the 3.5 JVM's port %d does not answer on the pod IP (%v); docs/connect.md#spark-35 says it does", patches.ConnectJVMPort, err)
	} else {
		c.Close()
	}
	pid := containerProcess(t, ns, pod.Name, "spark", "java")
	if environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(environ), "SPARK_CONNECT_AUTHENTICATE_TOKEN=") {
		t.Error("the 3.5 JVM has SPARK_CONNECT_AUTHENTICATE_TOKEN in its env, which it does not check")
	}

	const want = "RESULT 0:334,1:333,2:333"
	first := time.Now()
	if got := runConnectClient(t, site, server+";authorization="+url.PathEscape("Bearer "+bearer(t, ns, "analyst"))); got != want {
		t.Fatalf("the allowed client printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	t.Logf("Spark %s: the first query's result %v after kubectl apply (its session and query %v)", d.Version,
		time.Since(start).Round(time.Millisecond), time.Since(first).Round(time.Millisecond))
	checkRefused(t, site, ns, server)

	inPod := time.Now()
	if got := runClientPod(t, ns, "analyst", d, site, server); got != want {
		t.Errorf("the client pod printed %q, want %q", got, want)
	}
	t.Logf("Spark %s: the client pod ran its query in %v", d.Version, time.Since(inPod).Round(time.Millisecond))
	side := log(ns, pod.Name, patches.SidecarName)
	for _, want := range []string{`"msg":"Spark Connect session opened"`, `"user":"system:serviceaccount:` + ns + `:analyst"`, `"code":"PERMISSION_DENIED"`, `"jvmToken":false`} {
		if !strings.Contains(side, want) {
			t.Errorf("the sidecar's log does not have %s", want)
		}
	}
}

// connectDeployment35 is examples/connect-deployment.yaml on d with the
// pinned Spark Connect server jar in sparklet.io/fetch, served by the
// suite's file server.
func connectDeployment35(t *testing.T, d spark.Dist) []byte {
	t.Helper()
	jar, err := spark.ConnectJar()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := filepath.Abs("../../.cache/spark")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(jar.Path(cache))
	if err != nil {
		t.Fatalf("the Spark Connect server jar: %v (run make connect-jar)", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != jar.SHA256 {
		t.Fatalf("%s has sha256 %x, hack/spark/connect-jar pins %s: run make connect-jar", jar.Path(cache), sum, jar.SHA256)
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(example(t, "connect-deployment.yaml", d), &dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Annotations[vocab.AnnotationFetch] = fmt.Sprintf("- url: %s\n  sha256: %q\n",
		files.Serve("maven2/"+jar.Name(), data), jar.SHA256)
	out, err := yaml.Marshal(&dep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// clientScript35 goes before connectClient in a client pod: it prints the
// client's pyspark version and adds the pod's own ServiceAccount token to
// the server's address in argv[1] as its bearer token.
const clientScript35 = `import sys, urllib.parse, pyspark
print("CLIENT pyspark " + pyspark.__version__)
token = open("/var/run/secrets/kubernetes.io/serviceaccount/token").read().strip()
sys.argv[1] += ";authorization=" + urllib.parse.quote("Bearer " + token)
`

// runClientPod runs the Connect client in a pod of d's image as
// ServiceAccount sa, with the image's own pyspark client (Spark's Python
// code in /opt/spark/python) and the Python packages it needs (grpcio,
// pandas, pyarrow) from the connect client's site, which a pod of the pod
// runner sees at its host path (the namespace's PodSecurity level refuses
// a hostPath volume); and returns the line it printed.
func runClientPod(t *testing.T, ns, sa string, d spark.Dist, site, server string) string {
	t.Helper()
	py4j, err := filepath.Glob(filepath.Join(d.Home(os.Getenv("SPARKLET_BIN_DIR")), "python", "lib", "py4j-*-src.zip"))
	if err != nil || len(py4j) != 1 {
		t.Fatalf("the Spark %s distribution's py4j: %v %v", d.Version, py4j, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "connect-client-" + sa},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: sa,
			Containers: []corev1.Container{{
				Name:    "client",
				Image:   "apache/spark:" + d.Version,
				Command: []string{"python3", "-W", "ignore", "-c", clientScript35 + connectClient, server},
				Env:     []corev1.EnvVar{{Name: "PYTHONPATH", Value: "/opt/spark/python:/opt/spark/python/lib/" + filepath.Base(py4j[0]) + ":" + site}},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, pod.Name, "finished", 4*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	out := log(ns, pod.Name, "client")
	if !strings.Contains(out, "CLIENT pyspark "+d.Version+"\n") {
		t.Errorf("the client pod did not run pyspark %s's client:\n%s", d.Version, tail(out, 40))
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "RESULT ") || strings.HasPrefix(line, "ERROR ") {
			return line
		}
	}
	t.Fatalf("the client pod printed no result:\n%s", tail(out, 40))
	return ""
}
