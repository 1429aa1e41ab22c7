package certmanager

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/dynamic"

	"github.com/sparklet/sparklet/test/cluster"
)

// Options configure Start.
type Options struct {
	// BinDir holds cert-manager-controller, cert-manager-cainjector,
	// cert-manager-webhook and cert-manager-crds/
	// (hack/certmanager/build.sh).
	BinDir string
	// Dir holds the logs.
	Dir string
	// Cluster is the control plane cert-manager runs against.
	Cluster *cluster.Cluster
}

// CertManager is a running cert-manager.
type CertManager struct {
	opts  Options
	dyn   dynamic.Interface
	procs []process
}

type process struct {
	name string
	cmd  *exec.Cmd
	done <-chan struct{}
}

// Binaries are what hack/certmanager/build.sh puts in BinDir.
var Binaries = []string{"cert-manager-controller", "cert-manager-cainjector", "cert-manager-webhook", "cert-manager-crds"}

// Start installs cert-manager's CRDs, starts its controller, cainjector
// and webhook with the cluster's admin kubeconfig, registers the webhook
// with the API server, and returns once the webhook refuses an invalid
// Certificate, a self-signed Certificate is issued and its CA injected
// into a webhook configuration. Stop undoes it.
func Start(ctx context.Context, opts Options) (*CertManager, error) {
	for _, f := range Binaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, f)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: build it with hack/certmanager/build.sh (make certmanager-binary)", f, opts.BinDir)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(opts.Cluster.RESTConfig())
	if err != nil {
		return nil, err
	}
	m := &CertManager{opts: opts, dyn: dyn}
	if err := m.installCRDs(ctx); err != nil {
		return nil, err
	}
	for _, name := range []string{"cert-manager-controller", "cert-manager-cainjector"} {
		if err := m.spawn(name, []string{"--kubeconfig=" + opts.Cluster.Kubeconfig()}); err != nil {
			m.Stop()
			return nil, err
		}
	}
	if err := m.startWebhook(ctx); err != nil {
		m.Stop()
		return nil, err
	}
	if err := m.probe(ctx); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

// spawn starts BinDir/name with args, logging to LogFile(name).
func (m *CertManager) spawn(name string, args []string) error {
	cmd, done, err := cluster.Spawn(filepath.Join(m.opts.BinDir, name), args, m.LogFile(name), false)
	if err != nil {
		return err
	}
	m.procs = append(m.procs, process{name, cmd, done})
	return nil
}

// LogFile is the log of cert-manager-controller, -cainjector or -webhook.
func (m *CertManager) LogFile(name string) string { return filepath.Join(m.opts.Dir, name+".log") }

// Logs are the last n lines of each process's log.
func (m *CertManager) Logs(n int) string {
	var s string
	for _, p := range m.procs {
		s += fmt.Sprintf("--- %s:\n%s\n", p.name, cluster.Tail(m.LogFile(p.name), n))
	}
	return s
}

// exited returns an error naming a process that has exited, with its log.
func (m *CertManager) exited() error {
	for _, p := range m.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited; log %s:\n%s", p.name, m.LogFile(p.name), cluster.Tail(m.LogFile(p.name), 30))
		default:
		}
	}
	return nil
}

// Running reports an error if a process has exited since Start.
func (m *CertManager) Running() error { return m.exited() }

// Stop deletes the webhook's configurations and stops the processes. The
// CRDs and other objects stay with the cluster.
func (m *CertManager) Stop() {
	m.unregisterWebhook()
	for _, p := range m.procs {
		cluster.Terminate(p.cmd.Process.Pid, p.done)
	}
	m.procs = nil
}
