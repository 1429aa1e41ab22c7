package sidecar

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/encoding/protowire"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/policy"
)

// fakeJVM is the JVM's Connect port: it answers every call with one
// message and an OK status in trailers, and records the Authorization
// header it was sent.
type fakeJVM struct {
	addr  string
	calls atomic.Int32
	auth  atomic.Value // string
	body  atomic.Int64 // the last call's request size
}

func startFakeJVM(t testing.TB) *fakeJVM {
	j := &fakeJVM{}
	addr, stop, err := serveConnect("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.calls.Add(1)
		j.auth.Store(r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		j.body.Store(int64(len(body)))
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		_, _ = w.Write(append([]byte("reply to "), string(protoField(body[5:], 1))...))
		w.Header().Set("Grpc-Status", "0")
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	j.addr = addr
	return j
}

// reviews are the fake API server's answers: tokens to users, and the
// users RBAC allows.
type reviews struct {
	users   map[string]string
	allowed map[string]bool
	sars    []authorizationv1.SubjectAccessReviewSpec
}

func (rv *reviews) clientset() *kubecoretest.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if u, ok := rv.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		rv.sars = append(rv.sars, sar.Spec)
		sar.Status.Allowed = rv.allowed[sar.Spec.User]
		return true, sar, nil
	})
	return kubecoretest.New(cs)
}

// call makes one gRPC-shaped call through the proxy and returns the body
// and the status, from the trailers or, for a Trailers-Only answer, the
// headers.
func call(t *testing.T, addr, token string) (body, status, message string) {
	t.Helper()
	return callSession(t, addr, token, connectRequest("session-1", "me", false))
}

// connectRequest is a gRPC message frame of a Spark Connect request naming a
// session and a user_id, as Spark's clients write it.
func connectRequest(session, userID string, compressed bool) []byte {
	return connectRequestOf(session, userID, compressed, "the plan")
}

func connectRequestOf(session, userID string, compressed bool, plan string) []byte {
	var user, msg []byte
	user = protowire.AppendTag(user, 1, protowire.BytesType)
	user = protowire.AppendString(user, userID)
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, session)
	msg = protowire.AppendTag(msg, 2, protowire.BytesType)
	msg = protowire.AppendBytes(msg, user)
	msg = protowire.AppendTag(msg, 3, protowire.BytesType)
	msg = protowire.AppendString(msg, plan)
	flag := byte(0)
	if compressed {
		flag = 1
	}
	return append(binary.BigEndian.AppendUint32([]byte{flag}, uint32(len(msg))), msg...)
}

func callSession(t *testing.T, addr, token string, frame []byte) (body, status, message string) {
	t.Helper()
	return callRPC(t, addr, token, rpcExecutePlan, frame)
}

// callRPC makes one call of rpc, a path such as rpcReleaseSession.
func callRPC(t *testing.T, addr, token, rpc string, frame []byte) (body, status, message string) {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	body, status, message, err := callWith(t, tr, "http://"+addr+rpc, token, frame)
	if err != nil {
		t.Fatal(err)
	}
	return body, status, message
}

// callWith makes one call to target, a URL, through tr.
func callWith(t *testing.T, tr *http.Transport, target, token string, frame []byte) (body, status, message string, err error) {
	t.Helper()
	req, _ := http.NewRequest("POST", target, bytes.NewReader(frame))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("HTTP %d over %s, want 200 over HTTP/2 (gRPC answers with a status)", resp.StatusCode, resp.Proto)
	}
	status, message = resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if status == "" {
		status, message = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	m, err := url.PathUnescape(message)
	if err != nil {
		t.Fatalf("grpc-message %q is not percent-encoded: %v", message, err)
	}
	return string(b), status, m, nil
}

// TestConnectProxy: a client without a token, with a token the API server
// does not accept and with one whose user RBAC does not allow is refused
// with the gRPC status that says so; an allowed one reaches the JVM with
// the JVM's token in place of its own, its reviews reused for the next
// call. The SubjectAccessReview asks about the policy's verb and resource
// in the driver's namespace for the reviewed user.
func TestConnectProxy(t *testing.T) {
	jvm := startFakeJVM(t)
	rv := &reviews{users: map[string]string{"alice-token": "alice", "bob-token": "bob"}, allowed: map[string]bool{"alice": true}}
	reg := prometheus.NewRegistry()
	auth := newConnectAuth(rv.clientset(), "spark-jobs", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	proxy := newConnectProxy(auth, jvm.addr, []byte("jvm-secret"), limitsOf(policy.Connect{}), reg, logrus.NewEntry(logrus.New()))
	addr, stop, err := serveConnect("127.0.0.1:0", proxy, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	for _, c := range []struct {
		name, token, status, says string
	}{
		{"no token", "", "16", "no Kubernetes token"},
		{"unknown token", "forged", "16", "did not accept the token (invalid bearer token)"},
		{"not allowed", "bob-token", "7", "bob may not create sparkconnect.sparklet.io in namespace spark-jobs"},
	} {
		body, status, msg := call(t, addr, c.token)
		if status != c.status || !strings.Contains(msg, c.says) || body != "" {
			t.Errorf("%s: status %s %q, body %q; want status %s saying %q", c.name, status, msg, body, c.status, c.says)
		}
	}
	if n := jvm.calls.Load(); n != 0 {
		t.Fatalf("the JVM got %d calls from refused clients", n)
	}
	for i := range 2 {
		body, status, msg := call(t, addr, "alice-token")
		if status != "0" || body != "reply to session-1" {
			t.Fatalf("allowed call %d: status %s %q, body %q; want 0 and the JVM's reply", i, status, msg, body)
		}
	}
	if got := jvm.auth.Load(); got != "Bearer jvm-secret" {
		t.Errorf("the JVM was sent Authorization %q, want the JVM's own token", got)
	}
	// bob once, alice once: her second call reused the verdict.
	if len(rv.sars) != 2 {
		t.Fatalf("%d SubjectAccessReviews, want 2 (bob, alice)", len(rv.sars))
	}
	want := authorizationv1.ResourceAttributes{Namespace: "spark-jobs", Verb: "create", Group: "sparklet.io", Resource: "sparkconnect"}
	if s := rv.sars[1]; s.User != "alice" || s.Groups[0] != "system:authenticated" || *s.ResourceAttributes != want {
		t.Errorf("SubjectAccessReview %+v %+v, want user alice and %+v", s, s.ResourceAttributes, want)
	}
	for _, c := range []struct {
		user, code string
		want       float64
	}{{"alice", "OK", 2}, {"bob", "PERMISSION_DENIED", 1}, {"", "UNAUTHENTICATED", 2}} {
		if got := testutil.ToFloat64(proxy.requests.WithLabelValues(c.user, c.code)); got != c.want {
			t.Errorf("sparklet_sidecar_connect_requests_total{user=%q,code=%q} = %v, want %v", c.user, c.code, got, c.want)
		}
	}
}

// TestConnectProxyNoJVMToken: for a JVM that checks no token (Spark 3.5)
// the sidecar still refuses a client RBAC does not allow, and forwards an
// allowed client's call without any Authorization, never the client's own
// Kubernetes token.
func TestConnectProxyNoJVMToken(t *testing.T) {
	jvm := startFakeJVM(t)
	rv := &reviews{users: map[string]string{"alice-token": "alice", "bob-token": "bob"}, allowed: map[string]bool{"alice": true}}
	auth := newConnectAuth(rv.clientset(), "spark-jobs", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	addr, stop, err := serveConnect("127.0.0.1:0", newConnectProxy(auth, jvm.addr, nil, limitsOf(policy.Connect{}), prometheus.NewRegistry(), logrus.NewEntry(logrus.New())), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, status, msg := call(t, addr, "bob-token"); status != "7" || jvm.calls.Load() != 0 {
		t.Fatalf("a client RBAC does not allow: status %s %q, %d calls reached the JVM; want 7 and none", status, msg, jvm.calls.Load())
	}
	if body, status, msg := call(t, addr, "alice-token"); status != "0" || body != "reply to session-1" {
		t.Fatalf("an allowed client: status %s %q, body %q; want 0 and the JVM's reply", status, msg, body)
	}
	if got := jvm.auth.Load(); got != "" {
		t.Errorf("the JVM was sent Authorization %q, want none", got)
	}
}

// TestConnectProxyJVMDown: an admitted client whose JVM is not listening
// gets UNAVAILABLE, which Spark's clients retry.
func TestConnectProxyJVMDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	rv := &reviews{users: map[string]string{"t": "alice"}, allowed: map[string]bool{"alice": true}}
	auth := newConnectAuth(rv.clientset(), "ns", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	addr, stop, err := serveConnect("127.0.0.1:0", newConnectProxy(auth, down, []byte("x"), limitsOf(policy.Connect{}), prometheus.NewRegistry(), logrus.NewEntry(logrus.New())), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, status, msg := call(t, addr, "t"); status != "14" || !strings.Contains(msg, "did not answer") {
		t.Errorf("status %s %q, want 14 saying the server did not answer", status, msg)
	}
}

// TestConnectReviewCache: a verdict is reused until it expires, and a
// failure to reach the API server is not cached.
func TestConnectReviewCache(t *testing.T) {
	rv := &reviews{users: map[string]string{"t": "alice"}, allowed: map[string]bool{"alice": true}}
	cs := rv.clientset()
	var failing atomic.Bool
	cs.Interface.(*fake.Clientset).PrependReactor("create", "tokenreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, io.ErrUnexpectedEOF
		}
		return false, nil, nil
	})
	now := time.Unix(1000, 0)
	auth := newConnectAuth(cs, "ns", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	auth.now = func() time.Time { return now }
	ctx := context.Background()
	if v := auth.admit(ctx, "Bearer t"); v.code != grpcOK || v.user != "alice" {
		t.Fatalf("first call %+v, want alice admitted", v)
	}
	failing.Store(true)
	now = now.Add(connectReviewTTL - time.Second)
	if v := auth.admit(ctx, "bearer t"); v.code != grpcOK {
		t.Fatalf("within the TTL %+v, want the cached admission", v)
	}
	now = now.Add(2 * time.Second)
	if v := auth.admit(ctx, "Bearer t"); v.code != grpcUnavailable {
		t.Fatalf("after the TTL with the API down %+v, want UNAVAILABLE", v)
	}
	failing.Store(false)
	if v := auth.admit(ctx, "Bearer t"); v.code != grpcOK {
		t.Fatalf("the API back %+v, want admitted: a failure must not be cached", v)
	}
	if len(rv.sars) != 2 {
		t.Errorf("%d SubjectAccessReviews, want 2", len(rv.sars))
	}
}

// TestConnectSessions: a session belongs to the Kubernetes user who opened
// it; another allowed user naming its id is refused, and so is a call
// whose session the sidecar cannot read. Each user's sessions are counted.
func TestConnectSessions(t *testing.T) {
	jvm := startFakeJVM(t)
	rv := &reviews{users: map[string]string{"alice-token": "alice", "carol-token": "carol"}, allowed: map[string]bool{"alice": true, "carol": true}}
	auth := newConnectAuth(rv.clientset(), "ns", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	proxy := newConnectProxy(auth, jvm.addr, []byte("x"), limitsOf(policy.Connect{}), prometheus.NewRegistry(), logrus.NewEntry(logrus.New()))
	addr, stop, err := serveConnect("127.0.0.1:0", proxy, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, c := range []struct {
		name, token string
		frame       []byte
		status      string
		says        string
	}{
		{"alice opens a", "alice-token", connectRequest("a", "alice", false), "0", ""},
		{"carol opens b", "carol-token", connectRequest("b", "anyone", false), "0", ""},
		{"carol names a", "carol-token", connectRequest("a", "alice", false), "7", "session a belongs to another Kubernetes user"},
		{"alice again", "alice-token", connectRequest("a", "alice", false), "0", ""},
		{"compressed", "alice-token", connectRequest("c", "alice", true), "3", "compressed"},
		{"no session", "alice-token", connectRequest("", "alice", false), "3", "names no session_id"},
		{"no message", "alice-token", nil, "3", "no request message"},
	} {
		_, status, msg := callSession(t, addr, c.token, c.frame)
		if status != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("%s: status %s %q, want %s saying %q", c.name, status, msg, c.status, c.says)
		}
	}
	if n := jvm.calls.Load(); n != 3 {
		t.Errorf("the JVM got %d calls, want 3", n)
	}
	// A message larger than what the sidecar reads of it reaches the JVM whole.
	big := connectRequestOf("a", "alice", false, strings.Repeat("p", 3*sessionPeek))
	if body, status, msg := callSession(t, addr, "alice-token", big); status != "0" || body != "reply to a" || jvm.body.Load() != int64(len(big)) {
		t.Errorf("a large message: status %s %q, body %q, the JVM got %d bytes; want 0, its reply and %d bytes", status, msg, body, jvm.body.Load(), len(big))
	}
	for user, want := range map[string]float64{"alice": 1, "carol": 1} {
		if got := testutil.ToFloat64(proxy.sessions.opened.WithLabelValues(user)); got != want {
			t.Errorf("sparklet_sidecar_connect_sessions_total{user=%q} = %v, want %v", user, got, want)
		}
	}
}

// BenchmarkConnectProxy: a unary call with a small message, straight to
// a fake JVM and through the proxy with the client's verdict and session
// known, over one HTTP/2 connection each.
func BenchmarkConnectProxy(b *testing.B) {
	jvm := startFakeJVM(b)
	rv := &reviews{users: map[string]string{"t": "alice"}, allowed: map[string]bool{"alice": true}}
	auth := newConnectAuth(rv.clientset(), "ns", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	proxied, stop, err := serveConnect("127.0.0.1:0", newConnectProxy(auth, jvm.addr, []byte("x"), limitsOf(policy.Connect{}), prometheus.NewRegistry(), logrus.NewEntry(logrus.New())), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	ca := newTestCA(b, "bench")
	overTLS := serveConnectTLS(b, auth, jvm.addr, ca, b.TempDir())
	frame := connectRequest("s", "alice", false)
	for _, c := range []struct{ name, url string }{{"direct", "http://" + jvm.addr}, {"proxy", "http://" + proxied}, {"proxy-tls", "https://" + overTLS}} {
		b.Run(c.name, func(b *testing.B) {
			tr := tlsTransport(ca.pool)
			tr.Protocols.SetUnencryptedHTTP2(true)
			defer tr.CloseIdleConnections()
			for b.Loop() {
				req, _ := http.NewRequest("POST", c.url+"/spark.connect.SparkConnectService/AnalyzePlan", bytes.NewReader(frame))
				req.Header.Set("Content-Type", "application/grpc")
				req.Header.Set("Authorization", "Bearer t")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Trailer.Get("Grpc-Status") != "0" {
					b.Fatalf("status %q %q", resp.Trailer.Get("Grpc-Status")+resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message"))
				}
			}
		})
	}
}
