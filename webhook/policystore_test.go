package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/syncbuffer"
)

func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test
	resp, err := c.Get("https://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A webhook started on a bad policy serves but is not ready, says why in
// one log line and on /readyz, refuses admissions, and becomes ready when
// the file is fixed, without a restart.
func TestStartsUnreadyOnABadPolicyAndRecovers(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, policyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "policy.yaml")
	c, k := selfSigned(t, 1)
	writeAtomic(t, certFile, c)
	writeAtomic(t, keyFile, k)
	writeAtomic(t, policyFile, []byte("limits: {maxExecutorz: 5}\n"))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs syncbuffer.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	log.SetFormatter(&logrus.JSONFormatter{})
	s := NewServer(Config{Listen: addr, TLSCertFile: certFile, TLSKeyFile: keyFile, PolicyFile: policyFile, ReloadInterval: 10 * time.Millisecond}, log.WithField("component", "webhook"))
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-exited })

	var code int
	var body string
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("the webhook exited on a bad policy: %v", err)
		default:
		}
		code, body = readyz(t, addr)
		return code != 0, nil
	})
	if err != nil {
		t.Fatalf("the webhook does not serve: %s", body)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no valid policy: --policy "+policyFile+": policy: limits.maxExecutorz: unknown field") {
		t.Errorf("/readyz = %d %q, want 503 naming the file and the field", code, body)
	}
	var errorLines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["level"] == "error" {
			errorLines = append(errorLines, m)
		}
	}
	if len(errorLines) != 1 || !strings.Contains(errorLines[0]["error"].(string), "limits.maxExecutorz") || errorLines[0]["file"] != policyFile {
		t.Errorf("want one error line naming the file and the field, got %v", errorLines)
	}
	resp := call(t, s.Handler(), review(fixtureJSON(t, "testdata/minimal.pod.yaml"))).Response
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "no valid policy") {
		t.Errorf("admission without a policy: %+v", resp)
	}

	writeAtomic(t, policyFile, []byte("limits: {maxExecutors: 5}\n"))
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body = readyz(t, addr)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("not ready after the policy was fixed: %d %s", code, body)
	}
	if got := s.policies.get().Limits.MaxExecutors; got != 5 {
		t.Errorf("maxExecutors %d, want 5", got)
	}
}
