package realspark

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/internal/certs"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/fixtures"
)

// connectTLSSecret is the Secret testdata/policy.yaml names in
// connect.tlsSecretName for the test's namespace.
const connectTLSSecret = "spark-connect-tls"

// connectOnce is connectClient that gives up at the first error instead
// of retrying it, as Spark's client does for minutes with an UNAVAILABLE
// such as a failed TLS handshake.
const connectOnce = `import sys
from pyspark.sql import SparkSession, functions as F
try:
    spark = SparkSession.builder.remote(sys.argv[1]).create()
    spark.client.set_retry_policies([])
    rows = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count().orderBy("k").collect()
    print("RESULT " + ",".join("%d:%d" % (r["k"], r["count"]) for r in rows))
except Exception as e:
    print("ERROR " + " ".join(str(e).split()))
`

// TestConnectTLS runs examples/connect-deployment.yaml on the newest pin
// in a namespace whose policy names a TLS Secret for Connect servers. The
// pod waits for the Secret, saying which; the test then makes a CA and a
// certificate for the pod IP and stores them. The official Python client
// with use_ssl=true and token= (which it sends over TLS only), trusting
// that CA through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, runs a query with a
// shuffle; another ServiceAccount is refused with PERMISSION_DENIED over
// TLS; a cleartext client is refused with UNAUTHENTICATED saying to use
// TLS; a client trusting another CA fails the handshake. The Secret is
// then renewed by another CA: once the sidecar serves the new certificate
// to new connections, a client trusting the new CA runs its query and one
// trusting the old fails. Latency over TLS through the sidecar against
// straight to the JVM is logged.
func TestConnectTLS(t *testing.T) {
	t.Parallel()
	d := dists[len(dists)-1]
	site := fixtures.ConnectClientSite(t)
	ns := deployConnectServer(t, d, []string{"analyst"}, []string{"intruder"})

	// The pod runner sets up the pod's network before its volumes, so the
	// pod has its IP while it waits for the Secret (the kubelet mounts
	// volumes first and reports FailedMount events).
	pod := connectPodWhere(t, ns, "had an IP and said it waits for Secret "+connectTLSSecret, func(p *corev1.Pod) bool {
		return p.Status.PodIP != "" && waitingFor(p, `"`+patches.VolumeConnectTLS+`"`, connectTLSSecret, "not found")
	})
	t.Logf("without the Secret: %s", waitingMessage(pod))
	ip := pod.Status.PodIP
	first, second := newConnectCA(t, "first", ip), newConnectCA(t, "second", ip)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: connectTLSSecret}, Type: corev1.SecretTypeTLS, Data: first.secretData()}
	if _, err := env.Client.CoreV1().Secrets(ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServerStarted(t, ns, pod.Name, 1)
	pid, jvmToken := checkJVMBehindSidecar(t, ns, pod)

	server := "sc://" + net.JoinHostPort(ip, "15002") + "/;use_ssl=true;token="
	analyst := bearer(t, ns, "analyst")
	const want = "RESULT 0:334,1:333,2:333"
	start := time.Now()
	if got := runPythonEnv(t, site, first.trust(t), connectClient, "python3", "-W", "ignore", "SCRIPT", server+analyst); got != want {
		t.Fatalf("the allowed client over TLS printed %q, want %q\n%s", got, want, driverLogTail(ns, pod.Name))
	}
	t.Logf("Spark %s: the allowed client's session and query with a shuffle took %v over TLS through the sidecar", d.Version, time.Since(start).Round(time.Millisecond))

	for _, c := range []struct {
		who, url string
		env      []string
		says     []string
	}{
		{"intruder over TLS", server + bearer(t, ns, "intruder"), first.trust(t),
			[]string{"StatusCode.PERMISSION_DENIED", "system:serviceaccount:" + ns + ":intruder may not create sparkconnect.sparklet.io in namespace " + ns}},
		// Spark's client sends token= in the clear to localhost only, so
		// a cleartext client to the pod IP sends it as a header.
		{"cleartext", "sc://" + net.JoinHostPort(ip, "15002") + "/;authorization=Bearer%20" + analyst, nil,
			[]string{"StatusCode.UNAUTHENTICATED", "this Spark Connect server takes TLS only: connect with sc://HOST:PORT/;use_ssl=true;token=TOKEN"}},
		{"trusting another CA", server + analyst, second.trust(t), []string{"StatusCode.UNAVAILABLE", "CERTIFICATE_VERIFY_FAILED"}},
	} {
		got := runPythonEnv(t, site, c.env, connectOnce, "python3", "-W", "ignore", "SCRIPT", c.url)
		for _, says := range c.says {
			if !strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, says) {
				t.Errorf("%s: the client printed %q, want an error saying %q", c.who, got, says)
			}
		}
		t.Logf("%s: %.300s", c.who, got)
	}

	// From inside the pod, the same calls straight to the JVM and over TLS
	// through the sidecar, taking turns.
	got := runInPodEnv(t, site, first.trust(t), pid, connectLatency, "sc://localhost:"+strconv.Itoa(patches.ConnectJVMPort)+"/;token="+jvmToken, server+analyst)
	if !strings.HasPrefix(got, "LATENCY ") {
		t.Fatalf("the latency client printed %q", got)
	}
	t.Logf("Spark %s over TLS, median per call: %s", d.Version, strings.TrimPrefix(got, "LATENCY "))

	// cert-manager renews the Secret in place; the kubelet rewrites the
	// volume and the sidecar serves the new certificate to new
	// connections, without a restart.
	secret.Data = second.secretData()
	renewed := time.Now()
	if _, err := env.Client.CoreV1().Secrets(ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(ip, "15002")
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return servedSerial(addr) == second.server.Cert.SerialNumber.String(), nil
	})
	if err != nil {
		t.Fatalf("the sidecar still serves serial %s 2 minutes after the Secret was renewed, want %s", servedSerial(addr), second.server.Cert.SerialNumber)
	}
	t.Logf("the sidecar served the renewed certificate %v after the Secret's update", time.Since(renewed).Round(time.Millisecond))
	if got := runPythonEnv(t, site, second.trust(t), connectClient, "python3", "-W", "ignore", "SCRIPT", server+analyst); got != want {
		t.Errorf("after the renewal, a client trusting the new CA printed %q, want %q", got, want)
	}
	if got := runPythonEnv(t, site, first.trust(t), connectOnce, "python3", "-W", "ignore", "SCRIPT", server+analyst); !strings.Contains(got, "CERTIFICATE_VERIFY_FAILED") {
		t.Errorf("after the renewal, a client trusting the old CA printed %q, want a failed handshake", got)
	}
	if n := strings.Count(log(ns, pod.Name, "sparklet-sidecar"), `"msg":"serving certificate loaded"`); n != 2 {
		t.Errorf("the sidecar's log has %d \"serving certificate loaded\", want 2 (the first certificate and the renewed one)", n)
	}
}

// connectCA is a CA and the server certificate it signed for the pod IP.
type connectCA struct {
	ca, server *certs.Pair
}

func newConnectCA(t *testing.T, name, ip string) connectCA {
	t.Helper()
	now := time.Now()
	ca, err := certs.New(&x509.Certificate{Subject: pkix.Name{CommonName: name + " CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "spark-connect"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	certs.AddHosts(tmpl, ip)
	server, err := certs.New(tmpl, ca)
	if err != nil {
		t.Fatal(err)
	}
	return connectCA{ca: ca, server: server}
}

// secretData is a kubernetes.io/tls Secret's data, as cert-manager writes it.
func (c connectCA) secretData() map[string][]byte {
	return map[string][]byte{corev1.TLSCertKey: c.server.CertPEM, corev1.TLSPrivateKeyKey: c.server.KeyPEM, "ca.crt": c.ca.CertPEM}
}

// trust is the env that makes the Python client's gRPC trust this CA
// alone: grpc.ssl_channel_credentials() without roots, which the client
// calls for use_ssl (DefaultChannelBuilder.toChannel, pyspark 4.2.0),
// reads GRPC_DEFAULT_SSL_ROOTS_FILE_PATH.
func (c connectCA) trust(t *testing.T) []string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, c.ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=" + file}
}

// servedSerial is the serial number of the certificate a new TLS
// connection to addr is served, or the error.
func servedSerial(addr string) string {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}} //nolint:gosec // reads the certificate only
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// waitingFor reports whether a container of p waits with a message that
// has every one of words.
func waitingFor(p *corev1.Pod, words ...string) bool {
	msg := waitingMessage(p)
	for _, w := range words {
		if !strings.Contains(msg, w) {
			return false
		}
	}
	return msg != ""
}

// waitingMessage is the first waiting message among p's containers.
func waitingMessage(p *corev1.Pod) string {
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && w.Message != "" {
			return w.Message
		}
	}
	return ""
}

// runInPodEnv is runInPod with env added to the client's environment.
func runInPodEnv(t *testing.T, site string, env []string, pid int, script string, urls ...string) string {
	t.Helper()
	return runPythonEnv(t, site, env, script, append([]string{"nsenter", "--net=/proc/" + strconv.Itoa(pid) + "/ns/net", "python3", "-W", "ignore", "SCRIPT"}, urls...)...)
}
