package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sparklet/sparklet/internal/atomicfile"
	"github.com/sparklet/sparklet/internal/certs"
	"github.com/sparklet/sparklet/test/ready"
)

func selfSigned(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	p, err := certs.New(&x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.CertPEM, p.KeyPEM
}

func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startServer runs a Server on a free port and returns its address.
func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = l.Addr().String()
	l.Close()
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	s := NewServer(cfg, log.WithField("component", "webhook"))
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	exited := make(chan struct{})
	go func() { runErr = s.Run(ctx); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	err = ready.Wait(context.Background(), "https://"+cfg.Listen+"/readyz", 10*time.Millisecond, 10*time.Second, func() error {
		select {
		case <-exited:
			return runErr
		default:
			return nil
		}
	})
	if err != nil {
		t.Fatalf("server not ready: %v", err)
	}
	return s, cfg.Listen
}

func servedSerial(t *testing.T, addr string) int64 {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

func TestCertificateReloadWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c1, k1 := selfSigned(t, 1)
	writeAtomic(t, certFile, c1)
	writeAtomic(t, keyFile, k1)
	_, addr := startServer(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, ReloadInterval: 10 * time.Millisecond})
	if got := servedSerial(t, addr); got != 1 {
		t.Fatalf("serial = %d, want 1", got)
	}
	c2, k2 := selfSigned(t, 2)
	writeAtomic(t, keyFile, k2)
	writeAtomic(t, certFile, c2)
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return servedSerial(t, addr) == 2, nil
	})
	if err != nil {
		t.Fatal("new certificate not served after the files changed")
	}
}

func TestStartFailsWithoutCertificate(t *testing.T) {
	dir := t.TempDir()
	s := NewServer(Config{Listen: "127.0.0.1:0", TLSCertFile: filepath.Join(dir, "no.crt"), TLSKeyFile: filepath.Join(dir, "no.key"), ReloadInterval: time.Second},
		logrus.NewEntry(logrus.New()))
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run succeeded without certificate files")
	}
}

func TestBadPolicyKeepsTheLastGoodOne(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, policyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "policy.yaml")
	c, k := selfSigned(t, 1)
	writeAtomic(t, certFile, c)
	writeAtomic(t, keyFile, k)
	writeAtomic(t, policyFile, []byte("limits: {maxExecutors: 5}\n"))
	s, addr := startServer(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, PolicyFile: policyFile, ReloadInterval: 10 * time.Millisecond})

	writeAtomic(t, policyFile, []byte("limits: {maxExecutorz: 5}\n"))
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return counterValue(s.metrics.reloads.WithLabelValues("error")) == 1, nil
	})
	if err != nil {
		t.Fatal("bad policy not counted")
	}
	if got := s.policies.get().Limits.MaxExecutors; got != 5 {
		t.Errorf("policy in force has maxExecutors %d, want the last good 5", got)
	}
	if !ready.OK("https://" + addr + "/readyz") {
		t.Error("not ready with a last good policy")
	}

	writeAtomic(t, policyFile, []byte("limits: {maxExecutors: 7}\n"))
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.policies.get().Limits.MaxExecutors == 7, nil
	})
	if err != nil {
		t.Fatal("good policy not swapped in")
	}
}

func TestConfigValidateNamesFlags(t *testing.T) {
	err := (&Config{Listen: ":8443", ReloadInterval: time.Second}).Validate()
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("--tls-cert-file")) {
		t.Errorf("err = %v", err)
	}
}

func TestConfigValidateReaperFlags(t *testing.T) {
	base := Config{Listen: ":8443", ReloadInterval: time.Second, TLSCertFile: "c", TLSKeyFile: "k"}
	client := fake.NewClientset()
	for _, tc := range []struct {
		reap       bool
		namespaces []string
		client     bool
		want       string // "" for valid
	}{
		{reap: true, client: true},
		{reap: true, namespaces: []string{"team-a", "team-b"}, client: true},
		{reap: true, want: "--reap-kept-executors needs a Kubernetes client"},
		{namespaces: []string{"team-a"}, client: true, want: "--reap-namespaces applies only with --reap-kept-executors"},
		{reap: true, namespaces: []string{"Team_A"}, client: true, want: `--reap-namespaces: "Team_A"`},
	} {
		c := base
		c.ReapKeptExecutors, c.ReapNamespaces = tc.reap, tc.namespaces
		if tc.client {
			c.Client = client
		}
		err := c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("reap=%v namespaces=%v client=%v: error %v, want %q", tc.reap, tc.namespaces, tc.client, err, tc.want)
		}
	}
}

func TestProfilingIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := NewServer(Config{Profiling: on}, logrus.NewEntry(logrus.New())).Handler()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; rec.Code != want {
			t.Errorf("--profiling=%v: GET /debug/pprof/ = %d, want %d", on, rec.Code, want)
		}
	}
}
