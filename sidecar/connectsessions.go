package sidecar

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sparklet/sparklet/policy"
)

const (
	// sessionPeek is how much of a call's first message is read for its
	// session: Spark's clients write session_id and user_context, fields
	// 1 and 2, first (protobuf serialises fields in number order). It
	// bounds what a client's concurrent calls make the sidecar hold.
	sessionPeek = 16 << 10
	// sessionForget is how long a session unused is remembered when the
	// policy sets no connect.sessionIdleTimeout: past Spark's own default,
	// an hour (spark.connect.session.manager.defaultSessionTimeout), which
	// the pod may change.
	sessionForget = 2 * time.Hour
	// The RPCs of spark.connect.SparkConnectService that end a session and
	// that run an operation (base.proto, 4.0.0 to 4.3.0).
	rpcReleaseSession = "/spark.connect.SparkConnectService/ReleaseSession"
	rpcExecutePlan    = "/spark.connect.SparkConnectService/ExecutePlan"
)

// connectLimits are the policy's connect section as the sidecar applies
// it: at most maxSessions sessions open at once (0: no limit), and a
// session with no call for idle is closed by Spark and no longer counted.
type connectLimits struct {
	maxSessions int
	idle        time.Duration
}

func limitsOf(c policy.Connect) connectLimits {
	l := connectLimits{maxSessions: c.MaxSessions, idle: c.IdleTimeout()}
	if l.idle <= 0 {
		l.idle = sessionForget
	}
	return l
}

// connectSessions binds every Spark Connect session to the Kubernetes user
// who opened it, and counts the sessions open. Spark keys a session by its
// id and the user_id the client names, both of the client's choosing; with
// the binding, a client of another Kubernetes user that learns a session's
// id cannot use it. A session is open from its first call until it is
// released (the ReleaseSession RPC, which pyspark's SparkSession.stop
// sends) or has had no call for the idle timeout, after which Spark's
// session manager closes it too (SparkConnectSessionManager.periodicMaintenance,
// 4.0.0 to 4.3.0: idle since its last call, checked every
// spark.connect.session.manager.maintenanceInterval). A session with a
// call in flight is never idle here, so the sidecar counts a session at
// least as long as Spark 4 holds it. Spark 3.5 has neither ReleaseSession
// nor a timeout to set: it keeps a session 60 minutes after its last call
// (SparkConnectService.userSessionMapping, expireAfterAccess 3600 s, in
// spark-connect_2.12 3.5.7), so there the sidecar may stop counting a
// session that Spark still holds.
type connectSessions struct {
	log    *logrus.Entry
	users  *userLabels
	opened *prometheus.CounterVec
	limits connectLimits
	now    func() time.Time

	mu        sync.Mutex
	sessions  map[string]*connectSession // by session id
	lastPrune time.Time
}

type connectSession struct {
	user     string
	seen     time.Time // the start or end of its last call
	calls    int       // in flight
	released bool      // by ReleaseSession: Spark refuses it from now on
}

// open tells whether the session counts against the limit at now.
func (c *connectSession) open(now time.Time, idle time.Duration) bool {
	return !c.released && (c.calls > 0 || now.Sub(c.seen) < idle)
}

func newConnectSessions(limits connectLimits, users *userLabels, registry *prometheus.Registry, log *logrus.Entry) *connectSessions {
	s := &connectSessions{log: log, users: users, limits: limits, now: time.Now, sessions: map[string]*connectSession{},
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_connect_sessions_total", Help: "Spark Connect sessions opened, by the client's Kubernetes user.",
		}, []string{"user"})}
	registry.MustRegister(s.opened, (*openSessions)(s))
	return s
}

// claim lets user make a call in the session it names, opening the session
// for user when it is new and the limit allows. It returns the gRPC code
// and message that refuse the call, or grpcOK and done, to be called when
// the call ends.
func (s *connectSessions) claim(r *http.Request, user string) (code int, message string, done func()) {
	id, clientUser, err := peekSession(r)
	if err != nil {
		return grpcInvalidArgument, fmt.Sprintf("the sidecar could not read the call's Spark Connect session: %v", err), nil
	}
	release := r.URL.Path == rpcReleaseSession
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.sessions[id]; ok {
		if c.user != user {
			return grpcPermissionDenied, fmt.Sprintf("Spark Connect session %s belongs to another Kubernetes user; start a session of your own", id), nil
		}
		if c.released { // Spark answers that it is closed
			return grpcOK, "", func() {}
		}
		c.calls++
		c.seen = now
		return grpcOK, "", func() { s.end(c, release) }
	}
	if release { // a session the sidecar never saw opened: nothing to count
		return grpcOK, "", func() {}
	}
	s.prune(now)
	if max := s.limits.maxSessions; max > 0 {
		if holders := s.holders(now); holders.total >= max {
			return grpcResourceExhausted, fmt.Sprintf("this Spark Connect server holds its limit of %d sessions (the sparklet policy's connect.maxSessions): %s; "+
				"end a session with spark.stop(), or retry when one has been idle for %v", max, holders, s.limits.idle), nil
		}
	}
	c := &connectSession{user: user, seen: now, calls: 1}
	s.sessions[id] = c
	s.opened.WithLabelValues(s.users.label(user)).Inc()
	s.log.WithFields(logrus.Fields{"user": user, "session": id, "clientUserID": clientUser, "rpc": r.URL.Path}).
		Info("Spark Connect session opened")
	return grpcOK, "", func() { s.end(c, release) }
}

// end records the end of a call in session c.
func (s *connectSessions) end(c *connectSession, release bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.calls--
	c.seen = s.now()
	if release {
		c.released = true
	}
}

// forgetAll forgets every session: the JVM that held them ended, and
// Spark's sessions live in its memory.
func (s *connectSessions) forgetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if open := s.holders(s.now()).total; open > 0 {
		s.log.WithField("sessions", open).Info("Spark Connect sessions forgotten: the JVM that held them ended")
	}
	clear(s.sessions)
}

// prune forgets the sessions idle past the timeout, released ones
// included, at most once a minute unless a limit needs an exact count.
func (s *connectSessions) prune(now time.Time) {
	if s.limits.maxSessions == 0 && now.Sub(s.lastPrune) < time.Minute {
		return
	}
	for id, c := range s.sessions {
		if c.calls == 0 && now.Sub(c.seen) >= s.limits.idle {
			delete(s.sessions, id)
		}
	}
	s.lastPrune = now
}

// sessionHolders are the open sessions by user.
type sessionHolders struct {
	total  int
	byUser map[string]int
}

func (s *connectSessions) holders(now time.Time) sessionHolders {
	h := sessionHolders{byUser: map[string]int{}}
	for _, c := range s.sessions {
		if c.open(now, s.limits.idle) {
			h.total++
			h.byUser[c.user]++
		}
	}
	return h
}

// String names the holders, most sessions first, at most five.
func (h sessionHolders) String() string {
	users := slices.SortedFunc(maps.Keys(h.byUser), func(a, b string) int {
		return cmp.Or(cmp.Compare(h.byUser[b], h.byUser[a]), cmp.Compare(a, b))
	})
	var parts []string
	for i, u := range users {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more users", len(users)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s has %d", u, h.byUser[u]))
	}
	return strings.Join(parts, ", ")
}

// openSessions is the gauge of the sessions open now by user, counted
// when scraped.
type openSessions connectSessions

var openSessionsDesc = prometheus.NewDesc("sparklet_sidecar_connect_sessions_open",
	"Spark Connect sessions open now (neither released nor idle past the timeout), by the client's Kubernetes user.", []string{"user"}, nil)

func (o *openSessions) Describe(ch chan<- *prometheus.Desc) { ch <- openSessionsDesc }

func (o *openSessions) Collect(ch chan<- prometheus.Metric) {
	s := (*connectSessions)(o)
	s.mu.Lock()
	h := s.holders(s.now())
	s.mu.Unlock()
	byLabel := map[string]int{}
	for u, n := range h.byUser {
		byLabel[s.users.label(u)] += n
	}
	for l, n := range byLabel {
		ch <- prometheus.MustNewConstMetric(openSessionsDesc, prometheus.GaugeValue, float64(n), l)
	}
}

// peekSession reads the session_id and user_context.user_id of the call's
// first message, both in every request of spark.connect.SparkConnectService
// (sql/connect/common/src/main/protobuf/spark/connect/base.proto, 3.4 to
// 4.3), and puts what it read back in front of the body.
func peekSession(r *http.Request) (session, clientUser string, err error) {
	var head [5]byte // the compressed flag and the message's length
	if _, err := io.ReadFull(r.Body, head[:]); err != nil {
		return "", "", fmt.Errorf("no request message: %w", err)
	}
	if head[0] != 0 {
		return "", "", errors.New("the first message is compressed; send requests uncompressed, as Spark's clients do")
	}
	n := min(binary.BigEndian.Uint32(head[1:]), sessionPeek)
	msg := make([]byte, n)
	if _, err := io.ReadFull(r.Body, msg); err != nil {
		return "", "", fmt.Errorf("the request message ended early: %w", err)
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head[:]), bytes.NewReader(msg), r.Body), r.Body}
	session = string(protoField(msg, 1))
	clientUser = string(protoField(protoField(msg, 2), 1))
	if session == "" {
		return "", "", errors.New("the request names no session_id")
	}
	return session, clientUser, nil
}

// protoField is the last value of a length-delimited field of a protobuf
// message, or nil; a truncated message yields what precedes the cut.
func protoField(msg []byte, num protowire.Number) []byte {
	var found []byte
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return found
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return found
			}
			found, msg = v, msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return found
		}
		msg = msg[l:]
	}
	return found
}
