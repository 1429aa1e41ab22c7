package sidecar

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// bookmarkEvery is how often an idle watch that asked for bookmarks gets one.
const bookmarkEvery = 30 * time.Second

// serveWatch streams events to the JVM: over WebSocket when it asks for an
// upgrade (fabric8 does), else as newline-delimited JSON over a chunked
// response (kubectl, client-go, python). What it sends is watchStream's;
// the two transports only carry it.
func (a *API) serveWatch(w http.ResponseWriter, req *request, src *source, sel selectors) {
	since, _ := strconv.ParseUint(req.query.Get("resourceVersion"), 10, 64)
	s := &watchStream{src: src, sel: sel, since: since, bookmarks: isTrue(req.query.Get("allowWatchBookmarks"))}
	ctx := req.Context()
	if t, err := strconv.Atoi(req.query.Get("timeoutSeconds")); err == nil && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		serveWebSocket(ctx, w, req.Request, s.run)
		return
	}
	serveChunked(ctx, w, s.run)
}

// watchStream is one client's watch: where it resumes from, and what it
// has been sent.
type watchStream struct {
	src       *source
	sel       selectors
	since     uint64 // the client's resourceVersion; 0 for none
	bookmarks bool   // the client asked for bookmarks

	sent  uint64 // the newest version sent
	frame []byte // reused: each event's pod is encoded once, in the cache
}

// run sends the events the client missed, then every new one, until ctx
// ends, the hub drops the watch or send fails.
//
// It never answers 410: a watch resuming from a version the sidecar no
// longer holds gets the deletions since then (tombstones) and then the
// current state, because fabric8 drops a watch for good on 410
// (AbstractWatchManager.onStatus, fabric8 6.7.2 and 7.1.0).
func (s *watchStream) run(ctx context.Context, send func([]byte) error) {
	ch, missed, replay := s.src.hub.subscribe(s.since)
	defer s.src.hub.unsubscribe(ch)
	s.sent = s.since
	// missed comes first: when replay is false it holds the deletions
	// since the client's version, which must not be skipped as older
	// than the current state.
	for _, e := range missed {
		if s.emit(e, send) != nil {
			return
		}
	}
	if !replay {
		pods, _ := s.src.list(s.sel)
		for _, p := range pods {
			if s.emit(event{Type: watch.Added, Pod: p, rv: p.rv()}, send) != nil {
				return
			}
		}
	}
	s.follow(ctx, ch, send)
}

// emit sends e if the client wants it: one of its pods, and not a version
// it has already been sent (the current state's ADDED events aside).
func (s *watchStream) emit(e event, send func([]byte) error) error {
	if e.rv != 0 && e.rv <= s.sent && e.Type != watch.Added {
		return nil
	}
	if !s.src.keep(e.Pod) || !s.sel.matches(e.Pod) {
		return nil
	}
	if e.rv > s.sent {
		s.sent = e.rv
	}
	s.frame = appendEvent(s.frame[:0], e.Type, e.Pod.json)
	return send(s.frame)
}

// follow sends the hub's new events, and a bookmark every bookmarkEvery
// when the client asked for them.
func (s *watchStream) follow(ctx context.Context, ch <-chan event, send func([]byte) error) {
	tick := time.NewTicker(bookmarkEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-ch:
			if !ok || s.emit(e, send) != nil {
				return
			}
		case <-tick.C:
			if s.bookmarks && send(bookmark(s.src.hub.latestRV())) != nil {
				return
			}
		}
	}
}

// bookmark is a BOOKMARK event at resource version rv.
func bookmark(rv uint64) []byte {
	return encodeEvent(watch.Bookmark, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(rv, 10)}})
}

// serveWebSocket runs stream over a WebSocket, each event a text message,
// until the client goes away.
func serveWebSocket(ctx context.Context, w http.ResponseWriter, r *http.Request, stream func(context.Context, func([]byte) error)) {
	ws := websocket.Server{
		// fabric8 sends Origin http://127.0.0.1:<port>; any origin is
		// fine because the bearer token was checked already.
		Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler: func(conn *websocket.Conn) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() { // notice when the client goes away
				var discard []byte
				for websocket.Message.Receive(conn, &discard) == nil {
				}
				cancel()
			}()
			stream(ctx, func(b []byte) error { return websocket.Message.Send(conn, string(b)) })
		},
	}
	ws.ServeHTTP(w, r)
}

// serveChunked runs stream over a chunked HTTP response, each event a line
// flushed at once.
func serveChunked(ctx context.Context, w http.ResponseWriter, stream func(context.Context, func([]byte) error)) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	stream(ctx, func(b []byte) error {
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
}

func encodeEvent(t watch.EventType, p *corev1.Pod) []byte {
	raw, _ := json.Marshal(withKind(p))
	return appendEvent(nil, t, raw)
}

// appendEvent appends a metav1.WatchEvent of an encoded object to buf.
func appendEvent(buf []byte, t watch.EventType, object []byte) []byte {
	buf = append(buf, `{"type":`...)
	buf = strconv.AppendQuote(buf, string(t))
	buf = append(buf, `,"object":`...)
	buf = append(buf, object...)
	return append(buf, '}')
}
