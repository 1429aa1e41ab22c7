package schedulers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/ready"
)

// KueueNamespaceLabel marks the namespaces Kueue manages: its pod webhooks
// are called, and its pod integration acts, only in namespaces labelled
// KueueNamespaceLabel=KueueNamespaceManaged, so nothing else in the cluster
// depends on Kueue being up.
const (
	KueueNamespaceLabel   = "sparklet.io/kueue-test"
	KueueNamespaceManaged = "managed"
)

// KueueOptions configure StartKueue.
type KueueOptions struct {
	// BinDir holds kueue and kueue-crds/ (hack/kueue/build.sh).
	BinDir string
	// Dir holds Kueue's configuration, certificates and log.
	Dir string
	// Cluster is the control plane Kueue runs against.
	Cluster *cluster.Cluster
	// PodWebhookReinvocation is the reinvocationPolicy of Kueue's mutating
	// pod webhook; empty means IfNeeded, as docs/scheduling.md recommends.
	// Kueue's own manifests and chart default to Never, under which Kueue's
	// webhook never sees a label another webhook adds after it (webhook
	// configurations run in name order, and kueue-… sorts before sparklet).
	PodWebhookReinvocation string
}

// Kueue is a running Kueue controller.
type Kueue struct {
	opts       KueueOptions
	client     kubernetes.Interface
	dyn        dynamic.Interface
	cmd        *exec.Cmd
	exited     chan struct{}
	webhook    int
	health     int
	namespaces []string
}

// StartKueue installs Kueue's CRDs, starts bin/kueue and registers its pod
// webhooks, and returns once the API server's calls to them gate a pod.
// Stop undoes it.
func StartKueue(ctx context.Context, opts KueueOptions) (*Kueue, error) {
	for _, f := range []string{"kueue", "kueue-crds"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, f)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: build it with hack/kueue/build.sh (make kueue-binary)", f, opts.BinDir)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	if opts.PodWebhookReinvocation == "" {
		opts.PodWebhookReinvocation = "IfNeeded"
	}
	dyn, err := dynamic.NewForConfig(opts.Cluster.RESTConfig())
	if err != nil {
		return nil, err
	}
	k := &Kueue{opts: opts, client: opts.Cluster.Client(), dyn: dyn}
	if err := k.installCRDs(ctx); err != nil {
		return nil, err
	}
	if err := k.start(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	if err := k.registerWebhooks(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	if err := k.waitGating(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// LogFile is Kueue's log.
func (k *Kueue) LogFile() string { return filepath.Join(k.opts.Dir, "kueue.log") }

// LogTail is the last n lines of Kueue's log.
func (k *Kueue) LogTail(n int) string { return cluster.Tail(k.LogFile(), n) }

// start writes the configuration and certificates and runs bin/kueue
// until its /readyz answers: the webhook server is serving.
func (k *Kueue) start(ctx context.Context) error {
	var ports kueuePorts
	for _, p := range []*int{&ports.webhook, &ports.health, &ports.metrics} {
		free, err := cluster.FreePort()
		if err != nil {
			return err
		}
		*p = free
	}
	k.webhook, k.health = ports.webhook, ports.health
	cert, key, err := k.opts.Cluster.IssueServingCert("127.0.0.1")
	if err != nil {
		return fmt.Errorf("issue Kueue's serving certificate: %w", err)
	}
	certDir := filepath.Join(k.opts.Dir, "webhook-certs")
	// Without internal certificate management, Kueue reads its metrics
	// certificate from the fixed path /etc/kueue/metrics/certs
	// (cmd/kueue/main.go, v0.19.2): the shim lays this directory over /etc
	// in Kueue's own mount namespace.
	etcDir := filepath.Join(k.opts.Dir, "etc")
	metricsDir := filepath.Join(etcDir, "kueue", "metrics", "certs")
	for _, dir := range []string{certDir, metricsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for name, data := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return err
			}
		}
	}
	config := filepath.Join(k.opts.Dir, "config.yaml")
	if err := os.WriteFile(config, []byte(kueueConfig(ports, certDir)), 0o644); err != nil {
		return err
	}
	cmd, err := kueueCommand(filepath.Join(k.opts.BinDir, "kueue"), etcDir,
		[]string{"--config", config, "--zap-log-level", "2"}, k.opts.Cluster.Kubeconfig(), k.LogFile())
	if err != nil {
		return err
	}
	k.cmd, k.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(k.exited) }()
	err = ready.Wait(ctx, "http://127.0.0.1:"+strconv.Itoa(k.health)+"/readyz", 200*time.Millisecond, 2*time.Minute, func() error {
		select {
		case <-k.exited:
			return fmt.Errorf("kueue exited; log %s:\n%s", k.LogFile(), k.LogTail(30))
		default:
			return nil
		}
	})
	if err != nil {
		return fmt.Errorf("kueue not ready: %w\n%s", err, k.LogTail(30))
	}
	return nil
}

// kueuePorts are Kueue's listeners on 127.0.0.1.
type kueuePorts struct{ webhook, health, metrics int }

// kueueConfig is Kueue's configuration file: the pod integration only, in
// the labelled namespaces; every listener on loopback; the webhook
// certificate from certDir (no internal certificate management); no
// leader election and no visibility API server.
func kueueConfig(ports kueuePorts, certDir string) string {
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
managedJobsNamespaceSelector:
  matchLabels:
    %s: %s
integrations:
  frameworks: ["pod"]
featureGates:
  VisibilityOnDemand: false
clientConnection:
  qps: 100
  burst: 200
`, ports.health, ports.metrics, ports.webhook, certDir, KueueNamespaceLabel, KueueNamespaceManaged)
}

// ManageNamespace labels namespace ns so that Kueue's webhooks and pod
// integration act on its pods. Stop releases the pods of these namespaces.
func (k *Kueue) ManageNamespace(ctx context.Context, ns string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, KueueNamespaceLabel, KueueNamespaceManaged)
	if _, err := k.client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s for Kueue: %w", ns, err)
	}
	k.namespaces = append(k.namespaces, ns)
	return nil
}

// kueueProbeNamespace is a namespace Kueue manages, where dry-run pods
// show whether the API server calls Kueue's webhook.
const kueueProbeNamespace = "kueue-probe"

// probeGated reports whether a dry-run pod with a queue name comes back
// gated: the API server calls Kueue's mutating pod webhook.
func (k *Kueue) probeGated(ctx context.Context) (bool, error) {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{KueueQueueLabel: "probe"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	got, err := k.client.CoreV1().Pods(kueueProbeNamespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, err
	}
	return KueueGated(got), nil
}

// waitGating waits until the API server calls Kueue's webhook.
func (k *Kueue) waitGating(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueProbeNamespace}}
	if _, err := k.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := k.ManageNamespace(ctx, kueueProbeNamespace); err != nil {
		return err
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// The default service account appears shortly after the namespace.
		gated, err := k.probeGated(ctx)
		last = err
		return gated, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not get pods gated by Kueue's webhook (last error: %v): %w\n%s", last, err, k.LogTail(30))
	}
	return nil
}

// Stop removes Kueue's webhook configurations and waits until the API
// server no longer calls them, so that no pod creation waits on a stopped
// Kueue; then it stops Kueue and removes its finalizer from the pods of the
// namespaces it managed, so that they can be deleted. A control plane that
// is already gone leaves only the process to stop.
func (k *Kueue) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k.unregisterWebhooks(ctx)
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		gated, err := k.probeGated(ctx)
		var status apierrors.APIStatus
		if apierrors.IsNotFound(err) {
			return true, nil // never got as far as the probe namespace
		}
		if err != nil && !errors.As(err, &status) {
			return false, err // the API server is gone
		}
		return err == nil && !gated, nil
	})
	if k.cmd != nil {
		cluster.Terminate(k.cmd.Process.Pid, k.exited)
		k.cmd = nil
	}
	for _, ns := range k.namespaces {
		_ = k.releasePods(ctx, ns)
	}
}

func (k *Kueue) releasePods(ctx context.Context, ns string) error {
	pods, err := k.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods.Items {
		var keep []string
		for _, f := range p.Finalizers {
			if f != KueueFinalizer {
				keep = append(keep, f)
			}
		}
		if len(keep) == len(p.Finalizers) {
			continue
		}
		p.Finalizers = keep
		if _, err := k.client.CoreV1().Pods(ns).Update(ctx, &p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kueueCommand starts kueue through the shim (kueue_shim.go) with its log
// in logFile, in a process group of its own that dies with the caller.
func kueueCommand(binary, etcDir string, args []string, kubeconfig, logFile string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := &exec.Cmd{
		Path: self, Args: append([]string{kueueShimName, binary}, args...),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig, kueueShimEtcEnv + "=" + etcDir},
		Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Unshareflags: syscall.CLONE_NEWNS},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kueue: %w", err)
	}
	return cmd, nil
}
