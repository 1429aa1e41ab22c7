// Package sparkemu plays the Spark JVM's side: it makes the HTTP calls that
// Spark's Kubernetes scheduler backend makes through the fabric8 client, in
// the same order, with the same paths, query strings, bodies and watch
// transport, so the sparklet sidecar and a plain API server can be compared
// without a JVM. File references are to apache/spark at v3.5.4 and v4.0.0
// (K = resource-managers/kubernetes/core/src/main/scala/org/apache/spark)
// and fabric8io/kubernetes-client at v6.7.2 and v7.1.0
// (F = kubernetes-client/src/main/java/io/fabric8/kubernetes/client/dsl/internal).
package sparkemu

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode is the Spark release whose client behaviour is played.
type Mode string

const (
	// Spark35 is Spark 3.5.4 with fabric8 6.7.2 over OkHttp.
	Spark35 Mode = "3.5"
	// Spark40 is Spark 4.0.0 with fabric8 7.1.0 over Vert.x.
	Spark40 Mode = "4.0"
)

func (m Mode) fabric8() string {
	if m == Spark40 {
		return "7.1.0"
	}
	return "6.7.2"
}

// client is the part of fabric8's HTTP client Spark's calls go through.
type client struct {
	base    string
	token   string
	mode    Mode
	http    *http.Client
	wsTLS   *tls.Config
	mu      sync.Mutex
	counts  map[string]int
	retries int
}

// Spark sets kubernetes.request.retry.backoffLimit=3 (SparkKubernetesClientFactory),
// and fabric8 retries any method on 429, >=500 and I/O errors, 100 ms
// doubling (StandardHttpClient.retryWithExponentialBackoff).
const (
	retryLimit   = 3
	retryBackoff = 100 * time.Millisecond
	// spark.kubernetes.driver.requestTimeout default, K/deploy/k8s/Config.scala.
	requestTimeout = 10 * time.Second
)

func newClient(base, token string, tlsCfg *tls.Config, mode Mode) *client {
	tr := &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 64,
		DialContext: (&net.Dialer{Timeout: requestTimeout}).DialContext}
	return &client{base: strings.TrimSuffix(base, "/"), token: token, mode: mode, wsTLS: tlsCfg,
		http: &http.Client{Transport: tr}, counts: map[string]int{}}
}

func (c *client) count(key string) {
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
}

// response is a finished request.
type response struct {
	code int
	body []byte
}

// do sends one request with fabric8's retries; verb labels the statistics.
func (c *client) do(ctx context.Context, verb, method, path, query string, body []byte, contentType string) (response, error) {
	var last error
	for attempt := 0; attempt <= retryLimit; attempt++ {
		if attempt > 0 {
			c.mu.Lock()
			c.retries++
			c.mu.Unlock()
			select {
			case <-time.After(retryBackoff << (attempt - 1)):
			case <-ctx.Done():
				return response{}, ctx.Err()
			}
		}
		c.count(verb)
		r, err := c.once(ctx, method, path, query, body, contentType)
		if err == nil && r.code != http.StatusTooManyRequests && r.code < 500 {
			return r, nil
		}
		if err == nil {
			last = fmt.Errorf("%s %s: HTTP %d: %s", method, path, r.code, r.body)
		} else {
			last = err
		}
	}
	return response{}, last
}

func (c *client) once(ctx context.Context, method, path, query string, body []byte, contentType string) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	u := c.base + path
	if query != "" {
		u += "?" + query
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return response{}, err
	}
	c.headers(req.Header)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: out}, err
}

func (c *client) headers(h http.Header) {
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", "fabric8-kubernetes-client/"+c.mode.fabric8())
	h.Set("Accept", "application/json")
}

// jsonContentType is what a create sends: OkHttp's RequestBody.create adds
// a charset (fabric8 6.7.2 OkHttpClientImpl); Vert.x sends it bare.
func (c *client) jsonContentType() string {
	if c.mode == Spark35 {
		return "application/json; charset=utf-8"
	}
	return "application/json"
}

// deleteBody is what every fabric8 delete sends (OperationSupport.handleDelete):
// propagationPolicy Background and no gracePeriodSeconds.
var deleteBody = []byte(`{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Background"}`)

// selector builds fabric8's label selector (OperationContext.getLabelQueryParam):
// equality labels, then k!=v, then k in (...), joined by commas.
type selector struct {
	equals    map[string]string
	notEquals map[string]string
	in        map[string][]string
}

func (s selector) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.equals)) {
		parts = append(parts, k+"="+s.equals[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.notEquals)) {
		parts = append(parts, k+"!="+s.notEquals[k])
	}
	ins := make([]string, 0, len(s.in))
	for k := range s.in {
		ins = append(ins, k)
	}
	sort.Strings(ins)
	for _, k := range ins {
		parts = append(parts, k+" in ("+strings.Join(s.in[k], ",")+")")
	}
	return strings.Join(parts, ",")
}

// encode is fabric8's URLUtils.URLBuilder.addQueryParameter: form
// encoding, then "+" replaced by "%20".
func encode(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }

// query joins parameters in fabric8's order (BaseOperation.appendListOptionParams):
// fieldSelector, labelSelector, resourceVersion, timeoutSeconds,
// allowWatchBookmarks, watch.
func query(field, label string, extra ...string) string {
	var q []string
	if field != "" {
		q = append(q, "fieldSelector="+encode(field))
	}
	if label != "" {
		q = append(q, "labelSelector="+encode(label))
	}
	return strings.Join(append(q, extra...), "&")
}

func ids(n []int) []string {
	sort.Ints(n)
	out := make([]string, len(n))
	for i, v := range n {
		out[i] = strconv.Itoa(v)
	}
	return out
}

var errGone = errors.New("watch closed with 410 Gone")
