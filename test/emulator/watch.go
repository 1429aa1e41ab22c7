package emulator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watcher is fabric8's watch manager for one Watch (F/AbstractWatchManager.java,
// F/WatchConnectionManager.java over WebSocket, F/WatchHTTPManager.java
// over HTTP; 6.7.2 and 7.1.0).
type watcher struct {
	d        *Driver
	resource string // "pods"
	opts     listOpts
	onEvent  func(typ string, raw []byte)
	// ping sends a WebSocket ping at this interval: OkHttp's
	// pingInterval is fabric8's websocketPingInterval, 30 s, in Spark 3.5
	// (OkHttpClientFactory.newBuilder); zero sends none.
	ping time.Duration

	useHTTP bool
	rv      string
}

// errFatalStart is a first connection that Spark cannot survive.
type errFatalStart struct{ err error }

func (e errFatalStart) Error() string { return "start watch: " + e.err.Error() }
func (e errFatalStart) Unwrap() error { return e.err }

// start makes the first connection synchronously, as fabric8's
// BaseOperation.watch does: a WebSocket upgrade through the request retries
// (429, >=500 and I/O errors, F/../http/StandardHttpClient.java); on a 200
// or 503 answer it switches to the HTTP watch for good
// (F/BaseOperation.java submitWatch); any other refusal is returned, and
// Spark's ExecutorPodsWatchSnapshotSource.start then fails the
// SparkContext. fabric8 7.1.0 also falls back on an I/O error. The
// returned session runs until it ends; run keeps reconnecting.
func (w *watcher) start(ctx context.Context) (session, error) {
	var last error
	wait := retryBackoff
	for attempt := 0; attempt <= retryLimit; attempt++ {
		if attempt > 0 {
			w.d.st.add(&w.d.st.retries, 1)
			if !sleep(ctx, wait) {
				return nil, ctx.Err()
			}
			wait *= 2
		}
		s, err := w.connectWS(ctx)
		if err == nil {
			return s, nil
		}
		last = err
		var ue *upgradeError
		if errors.As(err, &ue) && ue.code != http.StatusTooManyRequests && ue.code < 500 {
			break // not retried
		}
	}
	var ue *upgradeError
	fallback := errors.As(last, &ue) && (ue.code == http.StatusOK || ue.code == http.StatusServiceUnavailable)
	if !errors.As(last, &ue) && w.d.cfg.Mode == Spark40 && ctx.Err() == nil {
		fallback = true // 7.1.0: a failure that is not a KubernetesClientException
	}
	if !fallback {
		return nil, errFatalStart{last}
	}
	w.d.log.WithError(last).Warn("websocket watch refused; falling back to an HTTP watch")
	w.d.st.add(&w.d.st.httpFallback, 1)
	w.useHTTP = true
	s, err := w.connectHTTP(ctx)
	if err != nil {
		return nil, errFatalStart{err}
	}
	return s, nil
}

// run reads events from s, then reconnects with the last resourceVersion
// after fabric8's backoff (1 s doubling, exponent capped at 5: 32 s;
// FA/Config.java watchReconnectInterval=1000, watchReconnectLimit=-1,
// WatchConnectionManager.BACKOFF_MAX_EXPONENT), until ctx ends or an ERROR
// event with code 410 closes the watch for good (AbstractWatchManager.onStatus).
func (w *watcher) run(ctx context.Context, s session) error {
	attempt := 0
	for {
		var retryAfter time.Duration
		if s != nil {
			attempt = 0 // a successful connection resets the backoff
			err := w.read(ctx, s)
			s.close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var se *statusEvent
			switch {
			case errors.Is(err, errGone):
				w.d.st.add(&w.d.st.gone, 1)
				return err
			case errors.As(err, &se):
				retryAfter = se.retryAfter
			}
			w.d.log.WithError(err).Debug("watch closed; reconnecting")
		}
		wait := time.Second << min(attempt, 5)
		attempt++
		if retryAfter > 0 {
			wait = retryAfter
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		w.d.st.add(&w.d.st.watchReconnects, 1)
		var err error
		if w.useHTTP {
			s, err = w.connectHTTP(ctx)
		} else {
			s, err = w.connectWS(ctx)
		}
		if err != nil {
			w.d.log.WithError(err).Debug("watch reconnect failed")
			s = nil
		}
	}
}

// session is one open watch connection.
type session interface {
	next() ([]byte, error)
	close()
}

// statusEvent is an ERROR event other than 410: fabric8 closes the request
// and reconnects, honouring details.retryAfterSeconds.
type statusEvent struct {
	status     metav1.Status
	retryAfter time.Duration
}

func (e *statusEvent) Error() string {
	return fmt.Sprintf("watch ERROR event: %d %s", e.status.Code, e.status.Message)
}

// read delivers events until the connection ends.
func (w *watcher) read(ctx context.Context, s session) error {
	stop := context.AfterFunc(ctx, s.close)
	defer stop()
	for {
		msg, err := s.next()
		if err != nil {
			return err
		}
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(msg, &ev); err != nil {
			w.d.log.WithError(err).Warn("watch message is not a WatchEvent; ignored")
			continue
		}
		if ev.Type == "ERROR" {
			var st metav1.Status
			_ = json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return errGone
			}
			se := &statusEvent{status: st}
			if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
				se.retryAfter = time.Duration(st.Details.RetryAfterSeconds) * time.Second
			}
			return se
		}
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if json.Unmarshal(ev.Object, &meta) == nil && meta.Metadata.ResourceVersion != "" {
			w.rv = meta.Metadata.ResourceVersion
		}
		if ev.Type == "BOOKMARK" {
			continue // updates the resourceVersion only
		}
		w.onEvent(ev.Type, ev.Object)
	}
}

func (w *watcher) query() string {
	o := w.opts
	if w.rv != "" {
		o.resourceVersion = w.rv
	}
	o.watch = true
	return o.String()
}

// origin is what AbstractWatchManager.startWatch sends: protocol://host[:port]
// of the request URL.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// connectWS opens the WebSocket: the collection URL with the watch
// parameters, the Origin header, and the interceptors' Authorization and
// User-Agent; no Sec-WebSocket-Protocol (WatchConnectionManager.start).
func (w *watcher) connectWS(ctx context.Context) (session, error) {
	c := w.d.c
	w.d.st.request("watch", w.resource)
	w.d.st.add(&w.d.st.watchConnects, 1)
	u, err := url.Parse(c.url("/"+w.resource, w.query()))
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Origin", origin(c.base))
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", c.mode.userAgent())
	conn, err := dialWebSocket(ctx, c.dialer, u, c.cfg.TLS, h)
	if err != nil {
		return nil, err
	}
	s := &wsSession{conn: conn, done: make(chan struct{})}
	if w.ping > 0 {
		go s.pinger(w.ping)
	}
	return s, nil
}

type wsSession struct {
	conn *wsConn
	done chan struct{}
	once sync.Once
}

func (s *wsSession) next() ([]byte, error) { return s.conn.next() }

func (s *wsSession) close() {
	s.once.Do(func() {
		close(s.done)
		s.conn.close()
	})
}

func (s *wsSession) pinger(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if s.conn.write(opPing, nil) != nil {
				return
			}
		}
	}
}

// connectHTTP is WatchHTTPManager: a plain GET with watch=true, no request
// timeout (forStreaming), newline-delimited events.
func (w *watcher) connectHTTP(ctx context.Context) (session, error) {
	c := w.d.c
	w.d.st.request("watch", w.resource)
	w.d.st.add(&w.d.st.watchConnects, 1)
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/"+w.resource, w.query()), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	c.headers(req.Header)
	req.Header.Set("Origin", origin(c.base))
	resp, err := c.stream.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		cancel()
		return nil, &statusError{"GET", req.URL.Path, resp.StatusCode, string(body)}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxMsg)
	return &httpSession{sc: sc, body: resp.Body, cancel: cancel}, nil
}

type httpSession struct {
	sc     *bufio.Scanner
	body   io.Closer
	cancel context.CancelFunc
}

func (s *httpSession) next() ([]byte, error) {
	for s.sc.Scan() {
		if line := strings.TrimSpace(s.sc.Text()); line != "" {
			return []byte(line), nil
		}
	}
	if err := s.sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (s *httpSession) close() {
	s.cancel()
	_ = s.body.Close()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
