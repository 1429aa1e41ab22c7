package sidecar

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/policy"
)

// TestConnectSessionLimit: with a limit of two sessions a third user's new
// session is refused with RESOURCE_EXHAUSTED naming the limit and the
// holders, while the holders' own calls go on; a session released with
// ReleaseSession, or idle past the timeout, no longer counts. The gauge
// shows the sessions open now and the counter the ExecutePlan calls, by
// user.
func TestConnectSessionLimit(t *testing.T) {
	jvm := startFakeJVM(t)
	users := map[string]string{}
	allowed := map[string]bool{}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		users[u+"-token"], allowed[u] = u, true
	}
	rv := &reviews{users: users, allowed: allowed}
	auth := newConnectAuth(rv.clientset(), "ns", policy.Sidecar{}.ConnectAccessOrDefault(), logrus.NewEntry(logrus.New()))
	reg := prometheus.NewRegistry()
	limits := limitsOf(policy.Connect{MaxSessions: 2, SessionIdleTimeout: "10m"})
	proxy := newConnectProxy(auth, jvm.addr, []byte("x"), limits, reg, logrus.NewEntry(logrus.New()))
	now := time.Unix(1_800_000_000, 0)
	proxy.sessions.now = func() time.Time { return now }
	addr, stop, err := serveConnect("127.0.0.1:0", proxy, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	steps := []struct {
		name, user, rpc, session string
		status, says             string
		later                    time.Duration // the clock moves on first
	}{
		{"alice opens a", "alice", rpcExecutePlan, "a", "0", "", 0},
		{"bob opens b", "bob", rpcExecutePlan, "b", "0", "", time.Minute},
		{"carol over the limit", "carol", rpcExecutePlan, "c", "8",
			"this Spark Connect server holds its limit of 2 sessions (the sparklet policy's connect.maxSessions): alice has 1, bob has 1; " +
				"end a session with spark.stop(), or retry when one has been idle for 10m0s", 0},
		{"alice goes on", "alice", rpcExecutePlan, "a", "0", "", 0},
		{"alice releases a", "alice", rpcReleaseSession, "a", "0", "", 0},
		{"carol gets in", "carol", rpcExecutePlan, "c", "0", "", 0},
		{"alice's released session still hers", "carol", rpcExecutePlan, "a", "7", "belongs to another Kubernetes user", 0},
		{"alice names it again: Spark answers, nothing counted", "alice", rpcExecutePlan, "a", "0", "", 0},
		{"dave over the limit", "dave", rpcExecutePlan, "d", "8", "bob has 1, carol has 1", 9*time.Minute + 59*time.Second},
		{"carol goes on", "carol", rpcExecutePlan, "c", "0", "", 0},
		{"bob idle 10m: dave gets in", "dave", rpcExecutePlan, "d", "0", "", time.Second},
		{"bob's idle session gone from the sidecar: a new one over the limit", "bob", rpcExecutePlan, "b", "8", "carol has 1, dave has 1", 0},
		{"a release of a session never seen opens none", "bob", rpcReleaseSession, "e", "0", "", 0},
	}
	for _, s := range steps {
		now = now.Add(s.later)
		_, status, msg := callRPC(t, addr, s.user+"-token", s.rpc, connectRequest(s.session, s.user, false))
		if status != s.status || !strings.Contains(msg, s.says) {
			t.Errorf("%s: status %s %q, want %s saying %q", s.name, status, msg, s.status, s.says)
		}
	}
	if err := testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP sparklet_sidecar_connect_sessions_open Spark Connect sessions open now (neither released nor idle past the timeout), by the client's Kubernetes user.
# TYPE sparklet_sidecar_connect_sessions_open gauge
sparklet_sidecar_connect_sessions_open{user="carol"} 1
sparklet_sidecar_connect_sessions_open{user="dave"} 1
# HELP sparklet_sidecar_connect_operations_total Spark Connect operations (ExecutePlan calls) forwarded to the JVM, by the client's Kubernetes user.
# TYPE sparklet_sidecar_connect_operations_total counter
sparklet_sidecar_connect_operations_total{user="alice"} 3
sparklet_sidecar_connect_operations_total{user="bob"} 1
sparklet_sidecar_connect_operations_total{user="carol"} 2
sparklet_sidecar_connect_operations_total{user="dave"} 1
`), "sparklet_sidecar_connect_sessions_open", "sparklet_sidecar_connect_operations_total"); err != nil {
		t.Error(err)
	}
	// The JVM ends: its sessions are gone, and a new one opens at once.
	proxy.sessions.forgetAll()
	if _, status, msg := callRPC(t, addr, "bob-token", rpcExecutePlan, connectRequest("f", "bob", false)); status != "0" {
		t.Errorf("after the JVM ended, a new session: status %s %q, want 0", status, msg)
	}
	proxy.sessions.forgetAll()
	if n := testutil.CollectAndCount(reg, "sparklet_sidecar_connect_sessions_open"); n != 0 {
		t.Errorf("%d open-session series after the JVM ended, want none", n)
	}
	if got := testutil.ToFloat64(proxy.requests.WithLabelValues("carol", "RESOURCE_EXHAUSTED")); got != 1 {
		t.Errorf("requests_total{carol,RESOURCE_EXHAUSTED} = %v, want 1", got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestConnectSessionOpen: a session with a call in flight is open however
// long ago the call began; a released one never is.
func TestConnectSessionOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		s    connectSession
		want bool
	}{
		{connectSession{seen: now.Add(-time.Hour), calls: 1}, true},
		{connectSession{seen: now.Add(-time.Hour)}, false},
		{connectSession{seen: now.Add(-time.Minute)}, true},
		{connectSession{seen: now, released: true}, false},
	} {
		if got := c.s.open(now, 10*time.Minute); got != c.want {
			t.Errorf("%+v open: %v, want %v", c.s, got, c.want)
		}
	}
	if l := limitsOf(policy.Connect{}); l.maxSessions != 0 || l.idle != sessionForget {
		t.Errorf("no connect policy: %+v, want no limit and %v", l, sessionForget)
	}
}

// TestUserLabels: the first maxUserLabels users keep their names, later
// ones are "other", and a user once named stays named.
func TestUserLabels(t *testing.T) {
	u := newUserLabels()
	for i := range maxUserLabels {
		if got, want := u.label(fmt.Sprint("user-", i)), fmt.Sprint("user-", i); got != want {
			t.Fatalf("label %q, want %q", got, want)
		}
	}
	if got := u.label("one-too-many"); got != "other" {
		t.Errorf("user %d's label %q, want other", maxUserLabels+1, got)
	}
	if got := u.label("user-0"); got != "user-0" {
		t.Errorf("a known user's label %q, want its name", got)
	}
	if got := u.label(""); got != "" {
		t.Errorf("no user's label %q, want empty", got)
	}
}
