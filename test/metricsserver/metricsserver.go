package metricsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sparklet/sparklet/test/cluster"
)

// Options configure Start.
type Options struct {
	// BinDir holds metrics-server (make metrics-server-binary).
	BinDir string
	// Dir holds its certificates, kubeconfig and log.
	Dir string
	// Cluster is the control plane it serves; its API server must run
	// with the front proxy (test/cluster) and --enable-aggregator-routing
	// (node.ClusterOptions).
	Cluster *cluster.Cluster
	// Host is the address it listens on and its EndpointSlice names: one
	// the API server reaches directly, the real node's host end.
	Host string
	// Node is the node whose metrics Start waits for.
	Node string
}

// Resolution is metrics-server's --metric-resolution: how often it
// scrapes the kubelet, the least it allows (v0.9.0,
// cmd/metrics-server/app/options/options.go, Validate).
const Resolution = 10 * time.Second

// scrapeTimeout is --kubelet-request-timeout, which must stay under 9/10
// of the resolution (the same Validate).
const scrapeTimeout = 5 * time.Second

// MetricsServer is a running metrics-server.
type MetricsServer struct {
	opts Options
	cmd  *exec.Cmd
	done <-chan struct{}
}

// Start registers metrics-server with the API server (RBAC, a Service
// and EndpointSlice at Host, the APIService v1beta1.metrics.k8s.io),
// starts it, and returns once the APIService is Available and the node's
// NodeMetrics are served: metrics-server has scraped the kubelet twice.
// Stop undoes it.
func Start(ctx context.Context, opts Options) (*MetricsServer, error) {
	binary := filepath.Join(opts.BinDir, "metrics-server")
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("metrics-server not found in %s: build it with hack/metricsserver/build.sh (make metrics-server-binary)", opts.BinDir)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort(opts.Host)
	if err != nil {
		return nil, err
	}
	m := &MetricsServer{opts: opts}
	args, err := m.files(port)
	if err != nil {
		return nil, err
	}
	if err := m.register(ctx, port); err != nil {
		return nil, err
	}
	if m.cmd, m.done, err = cluster.Spawn(binary, args, m.LogFile(), false); err != nil {
		return nil, err
	}
	if err := m.waitServing(ctx); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

// files writes metrics-server's serving certificate (from the cluster CA,
// for the name the API server verifies), its kubeconfig (a client
// certificate for the user the RBAC binds) and returns its flags.
func (m *MetricsServer) files(port int) ([]string, error) {
	c := m.opts.Cluster
	serving, servingKey, err := c.IssueServingCert(serverName, m.opts.Host)
	if err != nil {
		return nil, err
	}
	client, clientKey, err := c.IssueClientCert(user)
	if err != nil {
		return nil, err
	}
	ca, _ := c.CA()
	path := func(name string) string { return filepath.Join(m.opts.Dir, name) }
	for name, data := range map[string][]byte{"tls.crt": serving, "tls.key": servingKey, "ca.crt": ca} {
		if err := os.WriteFile(path(name), data, 0o600); err != nil {
			return nil, err
		}
	}
	kubeconfig := path("kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, "", client, clientKey); err != nil {
		return nil, err
	}
	// As metrics-server's own manifests run it (v0.9.0,
	// manifests/base/deployment.yaml), but the kubelet's serving
	// certificate is verified: the cluster CA issued it (test/node).
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=" + m.opts.Host, "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + path("tls.crt"), "--tls-private-key-file=" + path("tls.key"),
		"--kubelet-certificate-authority=" + path("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-request-timeout=" + scrapeTimeout.String(),
		"--metric-resolution=" + Resolution.String(),
		"--profiling=false",
	}, nil
}

// LogFile is metrics-server's log.
func (m *MetricsServer) LogFile() string { return filepath.Join(m.opts.Dir, "metrics-server.log") }

// exited returns an error if metrics-server has exited, with its log.
func (m *MetricsServer) exited() error {
	select {
	case <-m.done:
		return fmt.Errorf("metrics-server exited; log %s:\n%s", m.LogFile(), m.Logs(30))
	default:
		return nil
	}
}

// Running reports an error if metrics-server has exited since Start.
func (m *MetricsServer) Running() error { return m.exited() }

// Stop deletes the APIService, so that the API server's discovery no
// longer waits on it, and stops metrics-server.
func (m *MetricsServer) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.unregister(ctx)
	if m.cmd != nil {
		cluster.Terminate(m.cmd.Process.Pid, m.done)
		m.cmd = nil
	}
}

// freePort is a free TCP port on host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Logs are the last n lines of metrics-server's log.
func (m *MetricsServer) Logs(n int) string { return cluster.Tail(m.LogFile(), n) }
