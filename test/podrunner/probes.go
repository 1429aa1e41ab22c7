package podrunner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probe runs c's postStart hook and probes for one process, as the kubelet
// does: the hook, then the startup probe until it passes (the container is
// then started), then liveness and readiness. A failed hook, startup or
// liveness probe kills the process, whose restart is then the restart
// policy's business. Without a readiness probe a started container is
// ready.
func (w *podWorker) probe(ctx context.Context, c *container, proc *exec.Cmd, exited <-chan struct{}) {
	kill := func(why string) {
		w.logf("container %s: %s; killing it", c.spec.Name, why)
		terminate(proc, exited, time.Now().Add(w.gracePeriod()))
	}
	if !w.postStart(ctx, c) {
		if ctx.Err() == nil {
			kill("postStart hook failed")
		}
		return
	}
	if p := c.spec.StartupProbe; p != nil {
		if !w.loop(ctx, c, p, func(bool) bool { return true }) {
			if ctx.Err() == nil {
				kill("startup probe failed")
			}
			return
		}
	}
	w.mu.Lock()
	changed := !c.started
	c.started = true
	if changed {
		c.signal()
	}
	w.mu.Unlock()
	if changed {
		w.markDirty()
	}
	if c.spec.ReadinessProbe == nil {
		w.setReady(c, true)
	} else {
		go w.loop(ctx, c, c.spec.ReadinessProbe, func(ok bool) bool {
			w.setReady(c, ok)
			return false
		})
	}
	if p := c.spec.LivenessProbe; p != nil {
		if !w.loop(ctx, c, p, func(ok bool) bool { return !ok }) && ctx.Err() == nil {
			kill("liveness probe failed")
		}
	}
}

func (w *podWorker) setReady(c *container, ready bool) {
	w.mu.Lock()
	changed := c.ready != ready
	c.ready = ready
	if changed {
		c.signal()
	}
	w.mu.Unlock()
	if changed {
		w.markDirty()
	}
}

// loop probes every periodSeconds after initialDelaySeconds. Each time the
// result passes a threshold (successThreshold successes or
// failureThreshold failures in a row) it calls stop with it, and returns
// it if stop says so. It returns false when ctx ends.
func (w *podWorker) loop(ctx context.Context, c *container, p *corev1.Probe, stop func(ok bool) bool) bool {
	period := time.Duration(p.PeriodSeconds) * time.Second
	if p.PeriodSeconds == 0 {
		period = 10 * time.Second
	}
	success, failure := max(p.SuccessThreshold, 1), p.FailureThreshold
	if failure == 0 {
		failure = 3
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	var oks, fails int32
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if w.check(ctx, c, p) {
			oks, fails = oks+1, 0
			if oks >= success && stop(true) {
				return true
			}
		} else {
			oks, fails = 0, fails+1
			if fails >= failure {
				fails = 0
				if stop(false) {
					return false
				}
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// check runs a probe once.
func (w *podWorker) check(ctx context.Context, c *container, p *corev1.Probe) bool {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w.mu.Lock()
	podIP, spec := w.podIP, c.shim
	w.mu.Unlock()
	switch h := p.ProbeHandler; {
	case h.HTTPGet != nil:
		return w.checkHTTP(ctx, c, h.HTTPGet, podIP)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, c)
		if err != nil {
			return false
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		conn.Close()
		return true
	case h.Exec != nil:
		return checkExec(ctx, spec, h.Exec.Command)
	}
	return false // gRPC probes are not supported
}

func (w *podWorker) checkHTTP(ctx context.Context, c *container, g *corev1.HTTPGetAction, podIP string) bool {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return false
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), g.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "kube-probe/podrunner")
	for _, h := range g.HTTPHeaders {
		req.Header.Set(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		// The kubelet does not verify probe certificates either.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		DisableKeepAlives: true,
		Proxy:             nil,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// checkExec runs command in the container's namespaces, with its mounts
// and env; exit 0 passes.
func checkExec(ctx context.Context, spec shimSpec, command []string) bool {
	if spec.NetNS == "" || len(command) == 0 {
		return false
	}
	spec.Argv = command
	cmd, err := startShim(spec, nil)
	if err != nil {
		return false
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return false
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err == nil
}

// resolvePort turns a probe's port, a number or a container port's name,
// into a number.
func resolvePort(p intstr.IntOrString, c *container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.spec.Name, p.StrVal)
}
