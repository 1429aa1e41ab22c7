package check

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// TestPodConnect: for a Spark Connect server the webhook injected, check
// prints the connection strings clients use with a Kubernetes token, the
// permission they need, and the sessions open by user, read from the
// sidecar's metrics through the pod proxy.
func TestPodConnect(t *testing.T) {
	out := checkConnectServer(t, func(*policy.Effective) {})
	for _, want := range []string{
		"    sessions open: 3 (alice 2, system:serviceaccount:team-a:nb 1)\n",
		"  spark connect: the sidecar admits clients on port 15002 whose Kubernetes token passes a TokenReview and whose user may create sparkconnect.sparklet.io in namespace team-a\n",
		"    in the cluster: sc://10.1.2.3:15002/;authorization=Bearer%20$TOKEN\n",
		"    through its Service, to any of the server's pods: sc://connect-connect.team-a.svc:15002/;authorization=Bearer%20$TOKEN\n",
		"    through its GRPCRoute and the Gateway: sc://connect.team-a.connect.example.com:443/;use_ssl=true;token=$TOKEN\n",
		"    through kubectl port-forward -n team-a pod/connect-0 15002: sc://localhost:15002/;token=$TOKEN\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPodConnectTLS: for a server the policy gives a TLS certificate,
// check prints the TLS connection strings and the Secret whose CA
// clients trust, and no cleartext one.
func TestPodConnectTLS(t *testing.T) {
	out := checkConnectServer(t, func(p *policy.Effective) { p.Connect.TLSSecretName = "connect-tls" })
	for _, want := range []string{
		"    over TLS only, with the certificate of Secret connect-tls;",
		"    in the cluster: sc://HOST:15002/;use_ssl=true;token=$TOKEN, HOST a name the certificate holds",
		"    through its Service, to any of the server's pods: sc://connect-connect.team-a.svc:15002/;use_ssl=true;token=$TOKEN, if the certificate names connect-connect.team-a.svc\n",
		"    through its GRPCRoute and the Gateway: sc://connect.team-a.connect.example.com:443/;use_ssl=true;token=$TOKEN\n",
		"    through kubectl port-forward -n team-a pod/connect-0 15002: sc://localhost:15002/;use_ssl=true;token=$TOKEN, if the certificate names localhost too\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "authorization=Bearer") {
		t.Errorf("output has a cleartext connection string:\n%s", out.String())
	}
}

// checkConnectServer is what check prints of a running Connect server on
// Spark 4.3.0 injected under the policy as edit leaves it.
func checkConnectServer(t *testing.T, edit func(*policy.Effective)) *strings.Builder {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "connect-0", Namespace: "team-a", Labels: map[string]string{vocab.LabelRole: "driver"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:4.3.0",
			Command: []string{"/opt/spark/bin/spark-submit"}, Args: []string{"--class", "org.apache.spark.sql.connect.service.SparkConnectServer"}}}},
	}
	pol := options(t).Policy.For("team-a")
	edit(pol)
	if _, err := patches.Driver(pod, patches.Input{Namespace: "team-a", Policy: pol, Version: "test", AppID: "spark-1"}); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3"}
	pod.Annotations[vocab.AnnotationConnectURL] = "sc://connect-connect.team-a.svc:15002"
	pod.Annotations[vocab.AnnotationConnectRouteURL] = "sc://connect.team-a.connect.example.com:443"
	opts := options(t, hookConfig(), ns("team-a", nil), pod)
	opts.Client.(*fake.Clientset).PrependProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		if p := a.(k8stesting.ProxyGetAction); p.GetName() != "connect-0" || p.GetPort() != "7444" || p.GetPath() != "/metrics" {
			return true, nil, fmt.Errorf("proxied to %s port %s path %s, want the sidecar's metrics", p.GetName(), p.GetPort(), p.GetPath())
		}
		return true, metricsBody(sidecarMetrics), nil
	})
	var out strings.Builder
	if _, err := Pod(context.Background(), &out, opts, "team-a", "connect-0"); err != nil {
		t.Fatal(err)
	}
	return &out
}

// sidecarMetrics is part of a Connect server sidecar's /metrics.
const sidecarMetrics = `# TYPE sparklet_sidecar_connect_sessions_open gauge
sparklet_sidecar_connect_sessions_open{user="alice"} 2
sparklet_sidecar_connect_sessions_open{user="bob"} 0
sparklet_sidecar_connect_sessions_open{user="system:serviceaccount:team-a:nb"} 1
sparklet_sidecar_connect_sessions_total{user="alice"} 7
`

// metricsBody answers a proxied GET with body.
type metricsBody string

func (m metricsBody) DoRaw(context.Context) ([]byte, error) { return []byte(m), nil }

func (m metricsBody) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(m))), nil
}

// TestSessionsByUser: the open-sessions gauge summed by user, users with
// none left out.
func TestSessionsByUser(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{sidecarMetrics, "3 (alice 2, system:serviceaccount:team-a:nb 1)"},
		{"sparklet_sidecar_connect_sessions_open{user=\"bob\"} 0\n", "none"},
		{"", "none"},
	} {
		if got := sessionsByUser(c.in); got != c.want {
			t.Errorf("sessionsByUser(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
