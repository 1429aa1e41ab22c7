package sidecar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	// sessionPeek is how much of a call's first message is read for its
	// session: Spark's clients write session_id and user_context, fields
	// 1 and 2, first (protobuf serialises fields in number order). It
	// bounds what a client's concurrent calls make the sidecar hold.
	sessionPeek = 16 << 10
	// sessionForget is how long a session unused is remembered: past
	// Spark's own timeout, an hour (spark.connect.session.manager.defaultSessionTimeout).
	sessionForget = 2 * time.Hour
)

// connectSessions binds every Spark Connect session to the Kubernetes user
// who opened it. Spark keys a session by its id and the user_id the client
// names, both of the client's choosing; with the binding, a client of
// another Kubernetes user that learns a session's id cannot use it. Every
// session's user is logged once and counted.
type connectSessions struct {
	log      *logrus.Entry
	sessions *prometheus.CounterVec
	now      func() time.Time

	mu        sync.Mutex
	owners    map[string]sessionOwner // by session id
	lastPrune time.Time
}

type sessionOwner struct {
	user string
	seen time.Time
}

func newConnectSessions(registry *prometheus.Registry, log *logrus.Entry) *connectSessions {
	s := &connectSessions{log: log, now: time.Now, owners: map[string]sessionOwner{},
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_sidecar_connect_sessions_total", Help: "Spark Connect sessions opened, by the client's Kubernetes user.",
		}, []string{"user"})}
	registry.MustRegister(s.sessions)
	return s
}

// claim lets user use the session a call names, opening it for user when
// it is new. It returns the gRPC code and message that refuse the call, or
// grpcOK.
func (s *connectSessions) claim(r *http.Request, user string) (code int, message string) {
	id, clientUser, err := peekSession(r)
	if err != nil {
		return grpcInvalidArgument, fmt.Sprintf("the sidecar could not read the call's Spark Connect session: %v", err)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.owners[id]; ok {
		if o.user != user {
			return grpcPermissionDenied, fmt.Sprintf("Spark Connect session %s belongs to another Kubernetes user; start a session of your own", id)
		}
		s.owners[id] = sessionOwner{user: user, seen: now}
		return grpcOK, ""
	}
	if now.Sub(s.lastPrune) > time.Minute {
		for k, o := range s.owners {
			if now.Sub(o.seen) > sessionForget {
				delete(s.owners, k)
			}
		}
		s.lastPrune = now
	}
	s.owners[id] = sessionOwner{user: user, seen: now}
	s.sessions.WithLabelValues(user).Inc()
	s.log.WithFields(logrus.Fields{"user": user, "session": id, "clientUserID": clientUser, "rpc": r.URL.Path}).
		Info("Spark Connect session opened")
	return grpcOK, ""
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
