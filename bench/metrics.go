package main

import (
	"context"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// apiMetrics reads the API server's /metrics.
func apiMetrics(ctx context.Context, c kubernetes.Interface) []sample {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	return parseMetrics(string(raw))
}

func parseMetrics(text string) []sample {
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		head := line[:sp]
		s := sample{name: head, labels: map[string]string{}, value: v}
		if i := strings.IndexByte(head, '{'); i >= 0 {
			s.name = head[:i]
			for _, kv := range strings.Split(strings.TrimSuffix(head[i+1:], "}"), `",`) {
				k, val, ok := strings.Cut(kv, `="`)
				if ok {
					s.labels[k] = strings.TrimSuffix(val, `"`)
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// requestsByVerb sums apiserver_request_total by verb, for pods only
// (subresources excluded) or, with resource "", for everything. Answers
// 404 are left out: they are kwok's late deletes of pods already gone,
// not work any contender asked for.
func requestsByVerb(ms []sample, resource string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ms {
		if s.name != "apiserver_request_total" || (resource != "" && (s.labels["resource"] != resource || s.labels["subresource"] != "")) {
			continue
		}
		if s.labels["code"] == "404" {
			continue
		}
		out[s.labels["verb"]] += s.value
	}
	return out
}

// podRequests reads apiserver_request_total for pods, summed by verb.
func podRequests(ctx context.Context, c kubernetes.Interface) map[string]float64 {
	return requestsByVerb(apiMetrics(ctx, c), "pods")
}

// scrape reads a Prometheus endpoint other than the API server's; an
// unreachable one reads as no samples.
func scrape(ctx context.Context, client *http.Client, url string) []sample {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return parseMetrics(string(body))
}

// value is the first sample named name, or 0.
func value(ms []sample, name string) float64 {
	for _, s := range ms {
		if s.name == name {
			return s.value
		}
	}
	return 0
}

// buckets sums the buckets of histogram name by upper bound, over the
// samples keep accepts (nil: all).
func buckets(ms []sample, name string, keep func(labels map[string]string) bool) map[float64]float64 {
	out := map[float64]float64{}
	for _, s := range ms {
		if s.name != name+"_bucket" || (keep != nil && !keep(s.labels)) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		out[le] += s.value
	}
	return out
}

// latencyBuckets sums apiserver_request_duration_seconds buckets of all
// non-long-running requests (WATCH and CONNECT excluded) by upper bound.
func latencyBuckets(ms []sample) map[float64]float64 {
	return buckets(ms, "apiserver_request_duration_seconds", func(l map[string]string) bool {
		return l["verb"] != "WATCH" && l["verb"] != "CONNECT"
	})
}

// quantile is histogram_quantile over cumulative buckets, interpolating
// linearly inside the bucket as Prometheus does.
func quantile(q float64, buckets map[float64]float64) float64 {
	les := slices.Sorted(maps.Keys(buckets))
	if len(les) == 0 || buckets[math.Inf(1)] == 0 {
		return math.NaN()
	}
	rank := q * buckets[math.Inf(1)]
	prevLE, prevCount := 0.0, 0.0
	for _, le := range les {
		c := buckets[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return prevLE
			}
			if c == prevCount {
				return le
			}
			return prevLE + (le-prevLE)*(rank-prevCount)/(c-prevCount)
		}
		prevLE, prevCount = le, c
	}
	return prevLE
}

// diff subtracts counters read before from those read after.
func diff[K comparable](after, before map[K]float64) map[K]float64 {
	out := map[K]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func sum[K comparable](m map[K]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}
