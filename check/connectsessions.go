package check

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// sessionsOpenMetric is the sidecar's gauge of open Spark Connect sessions
// by the client's Kubernetes user (docs/metrics.md).
const sessionsOpenMetric = "sparklet_sidecar_connect_sessions_open"

// connectSessions writes the sessions a Connect server's sidecar counts
// open, by user, read from its /metrics through the API server's pod
// proxy (pods/proxy; a user who may not use it is told so).
func (o Options) connectSessions(ctx context.Context, r *report, pod *corev1.Pod, env map[string]string) {
	if pod.Status.Phase != corev1.PodRunning {
		return
	}
	_, port, err := net.SplitHostPort(env[vocab.EnvMetricsListen])
	if err != nil {
		r.line("  sessions: the sidecar's %s %q: %v", vocab.EnvMetricsListen, env[vocab.EnvMetricsListen], err)
		return
	}
	data, err := o.Client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, port, "/metrics", nil).DoRaw(ctx)
	if err != nil {
		r.line("  sessions: not read from the sidecar's metrics through the API server's pod proxy: %v", err)
		return
	}
	r.line("  sessions open: %s", sessionsByUser(string(data)))
}

// sessionsByUser sums the open-sessions gauge of a Prometheus text
// exposition by its user label: "none", or the total and each user's.
func sessionsByUser(metrics string) string {
	byUser := map[string]int{}
	total := 0
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, sessionsOpenMetric+`{user="`)
		if !ok {
			continue
		}
		user, value, ok := strings.Cut(rest, `"} `)
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if !ok || err != nil || n <= 0 {
			continue
		}
		byUser[user] += int(n)
		total += int(n)
	}
	if total == 0 {
		return "none"
	}
	users := make([]string, 0, len(byUser))
	for u, n := range byUser {
		users = append(users, fmt.Sprintf("%s %d", u, n))
	}
	sort.Strings(users)
	return fmt.Sprintf("%d (%s)", total, strings.Join(users, ", "))
}
