package sidecar

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/policy"
)

// connectTokenName is the JVM's Connect token's file, beside its API
// token (patches.ConnectTokenFile).
const connectTokenName = "connect"

// connectProxy serves Spark Connect clients on the pod's addresses and
// forwards those connectAuth admits to the JVM's Connect port on
// 127.0.0.1, with the JVM's own token in place of theirs, or with none
// for a JVM that checks none (Spark 3.5) (docs/connect.md). Clients speak gRPC over TLS when the policy names a
// certificate (tlsSecret), else over cleartext HTTP/2 with prior
// knowledge, as Spark's clients do without use_ssl; the proxy speaks
// cleartext to the JVM on 127.0.0.1. A refusal is a gRPC status, never an
// HTTP error, so the client shows its message.
type connectProxy struct {
	// tlsSecret, when set, is the Secret of the certificate clients must
	// connect with TLS to; a cleartext call is refused.
	tlsSecret  string
	auth       *connectAuth
	sessions   *connectSessions
	forward    http.Handler
	users      *userLabels
	requests   *prometheus.CounterVec
	operations *prometheus.CounterVec
}

// newConnectProxy forwards to backend with jvmToken, or with no
// authorization at all when jvmToken is nil: the client's own token never
// reaches the JVM.
func newConnectProxy(auth *connectAuth, backend string, jvmToken []byte, limits connectLimits, registry *prometheus.Registry, log *logrus.Entry) *connectProxy {
	target := &url.URL{Scheme: "http", Host: backend}
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	tr.Protocols.SetUnencryptedHTTP2(true)
	bearer := "Bearer " + string(jvmToken)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if jvmToken == nil {
				r.Out.Header.Del("Authorization")
				return
			}
			r.Out.Header.Set("Authorization", bearer)
		},
		Transport: tr,
		// Every message goes on at once: gRPC streams results.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			log.WithError(err).WithField("path", r.URL.Path).Warn("Spark Connect: the JVM did not answer")
			writeGRPCStatus(w, grpcUnavailable, fmt.Sprintf("the Spark Connect server in the pod did not answer (%v): "+
				"it may be starting or restarting; retry", err))
		},
	}
	users := newUserLabels()
	p := &connectProxy{auth: auth, sessions: newConnectSessions(limits, users, registry, log), forward: rp, users: users,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_connect_requests_total",
			Help: "Spark Connect RPCs by the client's Kubernetes user and the sidecar's decision (OK: forwarded to the JVM).",
		}, []string{"user", "code"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_connect_operations_total",
			Help: "Spark Connect operations (ExecutePlan calls) forwarded to the JVM, by the client's Kubernetes user.",
		}, []string{"user"})}
	registry.MustRegister(p.requests, p.operations)
	return p
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		http.Error(w, "this port serves Spark Connect: gRPC over HTTP/2", http.StatusUnsupportedMediaType)
		return
	}
	if p.tlsSecret != "" && r.TLS == nil {
		p.requests.WithLabelValues("", grpcCodeNames[grpcUnauthenticated]).Inc()
		writeGRPCStatus(w, grpcUnauthenticated, p.cleartextRefusal(r))
		return
	}
	v := p.auth.admit(r.Context(), r.Header.Get("Authorization"))
	var done func()
	if v.code == grpcOK {
		v.code, v.message, done = p.sessions.claim(r, v.user)
	}
	user := p.users.label(v.user)
	p.requests.WithLabelValues(user, grpcCodeNames[v.code]).Inc()
	if v.code != grpcOK {
		writeGRPCStatus(w, v.code, v.message)
		return
	}
	defer done()
	if r.URL.Path == rpcExecutePlan {
		p.operations.WithLabelValues(user).Inc()
	}
	p.forward.ServeHTTP(w, r)
}

// cleartextRefusal says how to connect to a server that takes TLS only.
// The call's token is never reviewed: it crossed the network unencrypted.
func (p *connectProxy) cleartextRefusal(r *http.Request) string {
	msg := "this Spark Connect server takes TLS only: connect with " + connectTLS + ", trusting the CA of the certificate in Secret " +
		strconv.Quote(p.tlsSecret) + " (docs/connect.md#tls)"
	if r.Header.Get("Authorization") != "" {
		msg += "; the token this call carried crossed the network unencrypted"
	}
	return msg
}

// writeGRPCStatus answers a gRPC call with a status and no message, a
// "Trailers-Only" response: HTTP 200 whose headers end the stream
// (doc/PROTOCOL-HTTP2.md in grpc/grpc).
func writeGRPCStatus(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(code))
	h.Set("Grpc-Message", encodeGRPCMessage(msg))
	w.WriteHeader(http.StatusOK)
}

// encodeGRPCMessage percent-encodes what grpc-message may not carry: bytes
// outside printable ASCII, and '%' itself (doc/PROTOCOL-HTTP2.md).
func encodeGRPCMessage(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// serveConnect serves h to Spark Connect clients on listen, HTTP/2 only,
// until stop is called: over cleartext, and over TLS too when tlsConf is
// set (tlsFirstListener).
func serveConnect(listen string, h http.Handler, tlsConf *tls.Config) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("the Spark Connect port %s: %w", listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	if tlsConf != nil {
		srv.Protocols.SetHTTP2(true)
		ln = newTLSFirstListener(ln, tlsConf)
	}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// startConnect writes the JVM's Connect token, next to its API token
// (none for a JVM that checks none, Spark 3.5's), and serves Connect
// clients, when the webhook asked for it (the driver is a Spark Connect
// server). It runs before the sidecar is ready, so the token is there
// when the JVM starts.
// With a certificate (the policy's connect.tlsSecretName, mounted at
// ConnectTLSDir) clients must use TLS; files that do not load keep the
// sidecar from starting.
func (s *Sidecar) startConnect(pol *policy.Effective) (stop func(), err error) {
	if s.cfg.ConnectListen == "" {
		return func() {}, nil
	}
	var token []byte
	if !s.cfg.ConnectNoToken {
		var err error
		if token, err = writeToken(filepath.Join(filepath.Dir(s.cfg.TokenFile), connectTokenName)); err != nil {
			return nil, fmt.Errorf("the Spark Connect token: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var tlsConf *tls.Config
	if s.cfg.ConnectTLSDir != "" {
		if tlsConf, err = loadConnectCert(ctx, s.cfg.ConnectTLSDir, pol.Connect.TLSSecretName, s.log); err != nil {
			cancel()
			return nil, err
		}
	}
	access := pol.Sidecar.ConnectAccessOrDefault()
	auth := newConnectAuth(s.client, s.cfg.Namespace, access, s.log)
	proxy := newConnectProxy(auth, s.cfg.ConnectBackend, token, limitsOf(pol.Connect), s.metrics.registry, s.log)
	if tlsConf != nil {
		proxy.tlsSecret = pol.Connect.TLSSecretName
		auth.connectWith = connectTLS
	}
	addr, stopServing, err := serveConnect(s.cfg.ConnectListen, proxy, tlsConf)
	if err != nil {
		cancel()
		return nil, err
	}
	s.apps.whenJVMEnds(proxy.sessions.forgetAll)
	s.log.WithFields(logrus.Fields{"listen": addr, "jvm": s.cfg.ConnectBackend, "verb": access.Verb, "resource": auth.resourceName(),
		"maxSessions": pol.Connect.MaxSessions, "sessionIdleTimeout": limitsOf(pol.Connect).idle.String(), "tls": tlsConf != nil,
		"jvmToken": token != nil}).
		Info("serving Spark Connect clients")
	return func() { stopServing(); cancel() }, nil
}
