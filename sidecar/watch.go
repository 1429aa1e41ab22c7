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
// response (kubectl, client-go, python). It never answers 410: a watch
// resuming from a version the sidecar no longer holds gets the current
// state instead, because fabric8 drops a watch for good on 410
// (AbstractWatchManager.onStatus, fabric8 6.7.2 and 7.1.0).
func (a *API) serveWatch(w http.ResponseWriter, req *request, src *source, sel selectors) {
	since, _ := strconv.ParseUint(req.query.Get("resourceVersion"), 10, 64)
	bookmarks := isTrue(req.query.Get("allowWatchBookmarks"))
	ctx := req.Context()
	if t, err := strconv.Atoi(req.query.Get("timeoutSeconds")); err == nil && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	stream := func(send func([]byte) error) {
		ch, missed, replay := src.hub.subscribe(since)
		defer src.hub.unsubscribe(ch)
		sent := since
		var frame []byte // reused: each event's pod is encoded once, in the cache
		emit := func(e event) error {
			if e.rv != 0 && e.rv <= sent && e.Type != watch.Added {
				return nil
			}
			if !src.keep(e.Pod) || !sel.matches(e.Pod) {
				return nil
			}
			if e.rv > sent {
				sent = e.rv
			}
			frame = appendEvent(frame[:0], e.Type, e.Pod.json)
			return send(frame)
		}
		// missed comes first: when replay is false it holds the deletions
		// since the client's version, which must not be skipped as older
		// than the current state.
		for _, e := range missed {
			if emit(e) != nil {
				return
			}
		}
		if !replay {
			pods, _ := src.list(sel)
			for _, p := range pods {
				if err := emit(event{Type: watch.Added, Pod: p, rv: p.rv()}); err != nil {
					return
				}
			}
		}
		tick := time.NewTicker(bookmarkEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-ch:
				if !ok {
					return
				}
				if emit(e) != nil {
					return
				}
			case <-tick.C:
				if bookmarks {
					rv := src.hub.latestRV()
					bm := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
						ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(rv, 10)}}
					if send(encodeEvent(watch.Bookmark, bm)) != nil {
						return
					}
				}
			}
		}
	}

	if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		ws := websocket.Server{
			// fabric8 sends Origin http://127.0.0.1:<port>; any origin is
			// fine because the bearer token was checked already.
			Handshake: func(*websocket.Config, *http.Request) error { return nil },
			Handler: func(conn *websocket.Conn) {
				done := make(chan struct{})
				go func() { // notice when the client goes away
					var discard []byte
					for websocket.Message.Receive(conn, &discard) == nil {
					}
					close(done)
				}()
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-done:
						cancel()
					case <-ctx.Done():
					}
				}()
				stream(func(b []byte) error { return websocket.Message.Send(conn, string(b)) })
			},
		}
		ws.ServeHTTP(w, req.Request)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	stream(func(b []byte) error {
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
