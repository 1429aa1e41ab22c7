package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fabric8's request retries as Spark configures them: any method is retried
// on 429, >=500 and I/O errors (F/../http/StandardHttpClient.java
// retryWithExponentialBackoff in 6.7.2, shouldRetry in 7.1.0), 100 ms
// doubling (FA/Config.java requestRetryBackoffInterval), at most 3 retries
// because Spark sets kubernetes.request.retry.backoffLimit=3
// (K/deploy/k8s/SparkKubernetesClientFactory.scala, 3.5.4 and 4.0.0).
const (
	retryLimit   = 3
	retryBackoff = 100 * time.Millisecond
	// spark.kubernetes.driver.requestTimeout and connectionTimeout, both
	// 10000 ms (K/deploy/k8s/Config.scala).
	requestTimeout = 10 * time.Second
)

// deleteBody is the body of every fabric8 delete: propagationPolicy from
// the client context (Background) and no gracePeriodSeconds
// (F/OperationSupport.java handleDelete; HasMetadataOperation
// DEFAULT_PROPAGATION_POLICY; 6.7.2 and 7.1.0).
var deleteBody = []byte(`{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Background"}`)

// client is the part of fabric8's HTTP client Spark's calls go through.
type client struct {
	base   *url.URL
	token  string
	mode   Mode
	http   *http.Client // per-request timeout applied by do
	stream *http.Client // no timeout: the HTTP watch fallback (forStreaming)
	dialer *net.Dialer
	cfg    *Config
	stats  *counters
}

func newClient(cfg *Config, base *url.URL, st *counters) *client {
	dialer := &net.Dialer{Timeout: requestTimeout}
	tr := &http.Transport{
		TLSClientConfig: cfg.TLS, DialContext: dialer.DialContext,
		// OkHttp's dispatcher allows 5 concurrent requests per host
		// (Spark 3.5 sets its own Dispatcher); Vert.x pools are larger.
		MaxConnsPerHost: cfg.Mode.maxConnsPerHost(), MaxIdleConnsPerHost: 64,
		ForceAttemptHTTP2: false,
	}
	return &client{base: base, token: cfg.Token, mode: cfg.Mode, cfg: cfg, dialer: dialer, stats: st,
		http: &http.Client{Transport: tr}, stream: &http.Client{Transport: tr}}
}

// call is one logical fabric8 request.
type call struct {
	verb     string // Kubernetes audit verb, for statistics
	resource string // pods, configmaps, ...
	method   string
	path     string // below /api/v1/namespaces/{ns}
	query    string // already in fabric8's order and encoding
	body     []byte
	ctype    string
}

// response is a finished request.
type response struct {
	code int
	body []byte
}

// statusError is a non-2xx answer after retries.
type statusError struct {
	method, path string
	code         int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.code, strings.TrimSpace(e.body))
}

func (c *client) url(path, query string) string {
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/v1/namespaces/" + c.cfg.Namespace + path
	if query != "" {
		u += "?" + query
	}
	return u
}

// do sends one call with fabric8's retries and returns the last answer.
// Only transport errors and exhausted retries are errors; callers decide
// what a status means.
func (c *client) do(ctx context.Context, k call) (response, error) {
	var last error
	var wait time.Duration
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			c.stats.add(&c.stats.retries, 1)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return response{}, ctx.Err()
			}
		}
		c.stats.request(k.verb, k.resource)
		r, hdr, err := c.once(ctx, k)
		switch {
		case err != nil && ctx.Err() != nil:
			return response{}, ctx.Err()
		case err != nil:
			last = fmt.Errorf("%s %s: %w", k.method, k.path, err)
		case r.code == http.StatusTooManyRequests || r.code >= 500:
			last = &statusError{k.method, k.path, r.code, string(r.body)}
		default:
			return r, nil
		}
		if attempt >= retryLimit {
			if err == nil {
				return r, last
			}
			return response{}, last
		}
		wait = retryBackoff << attempt
		if ra := retryAfter(hdr); ra > wait {
			wait = ra
		}
	}
}

// retryAfter reads Retry-After as seconds or an HTTP date
// (StandardHttpClient.retryAfterMillis).
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

func (c *client) once(ctx context.Context, k call) (response, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if k.body != nil {
		rd = bytes.NewReader(k.body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, c.url(k.path, k.query), rd)
	if err != nil {
		return response{}, nil, err
	}
	c.headers(req.Header)
	if k.ctype != "" {
		req.Header.Set("Content-Type", k.ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return response{}, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, nil, err
	}
	return response{code: resp.StatusCode, body: out}, resp.Header, nil
}

// headers are what fabric8's interceptors add: the bearer token
// (TokenRefreshInterceptor) and the user agent (FA/Config.java
// userAgent "fabric8-kubernetes-client/<version>").
func (c *client) headers(h http.Header) {
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", c.mode.userAgent())
	h.Set("Accept", "application/json")
}

// jsonType is a create's or replace's content type: OkHttp's
// RequestBody.create appends a charset (fabric8 6.7.2 OkHttpClientImpl);
// Vert.x sends fabric8's string as is (7.1.0 VertxHttpRequest).
func (c *client) jsonType() string {
	if c.mode == Spark35 {
		return "application/json; charset=utf-8"
	}
	return "application/json"
}

// selector is fabric8's label selector (F/OperationContext.java
// getLabelQueryParam, 6.7.2 and 7.1.0): equality labels, then k!=v, then
// k in (...), joined by commas, each group in insertion order: the DSL's
// withLabel calls fill LinkedHashMaps (F/FilterNestedImpl.java).
type selector struct {
	equals    [][2]string
	notEquals [][2]string
	in        []selIn
}

type selIn struct {
	key    string
	values []string
}

func (s selector) with(k, v string) selector {
	s.equals = append(slices.Clone(s.equals), [2]string{k, v})
	return s
}

func (s selector) without(k, v string) selector {
	s.notEquals = append(slices.Clone(s.notEquals), [2]string{k, v})
	return s
}

func (s selector) withIn(k string, values ...string) selector {
	s.in = append(slices.Clone(s.in), selIn{k, values})
	return s
}

func (s selector) String() string {
	var parts []string
	for _, kv := range s.equals {
		parts = append(parts, kv[0]+"="+kv[1])
	}
	for _, kv := range s.notEquals {
		parts = append(parts, kv[0]+"!="+kv[1])
	}
	for _, in := range s.in {
		parts = append(parts, in.key+" in ("+strings.Join(in.values, ",")+")")
	}
	return strings.Join(parts, ",")
}

// enc is fabric8's URLUtils.URLBuilder.addQueryParameter: form encoding,
// then "+" replaced by "%20" (FA/utils/URLUtils.java).
func enc(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }

// listOpts are the query parameters fabric8 appends, in its order
// (F/BaseOperation.java appendListOptionParams, after the selectors the
// operation context adds): fieldSelector, labelSelector, resourceVersion,
// timeoutSeconds, allowWatchBookmarks, watch.
type listOpts struct {
	field, label    string
	resourceVersion string
	timeoutSeconds  int
	watch           bool
}

func (o listOpts) String() string {
	var q []string
	if o.field != "" {
		q = append(q, "fieldSelector="+enc(o.field))
	}
	if o.label != "" {
		q = append(q, "labelSelector="+enc(o.label))
	}
	if o.resourceVersion != "" {
		q = append(q, "resourceVersion="+enc(o.resourceVersion))
	}
	if o.timeoutSeconds > 0 {
		q = append(q, "timeoutSeconds="+strconv.Itoa(o.timeoutSeconds))
	}
	if o.watch {
		// fabric8 asks for bookmarks on every watch (allowWatchBookmarks
		// defaults to true in BaseOperation.watch).
		q = append(q, "allowWatchBookmarks=true", "watch=true")
	}
	return strings.Join(q, "&")
}

// ids formats executor ids sorted ascending, as Spark sorts them before
// withLabelIn.
func ids(n []int) []string {
	s := slices.Sorted(slices.Values(n))
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Itoa(v)
	}
	return out
}

// counters are the statistics every part updates.
type counters struct {
	mu               sync.Mutex
	requests         map[string]int
	retries          int
	watchConnects    int
	watchReconnects  int
	httpFallback     int
	gone             int
	created          int
	createErrors     int
	firstCreateError string
	lastCreateError  string
}

func (s *counters) request(verb, resource string) {
	s.mu.Lock()
	s.requests[verb+" "+resource]++
	s.mu.Unlock()
}

func (s *counters) add(field *int, n int) {
	s.mu.Lock()
	*field += n
	s.mu.Unlock()
}

var errGone = errors.New("watch ended with 410 Gone; Spark goes on with polling only")
