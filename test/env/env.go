package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/internal/atomicfile"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/podrunner"
	"github.com/sparklet/sparklet/test/ready"
	"github.com/sparklet/sparklet/test/sparkimage"
	"github.com/sparklet/sparklet/test/webhookconfig"
	"github.com/sparklet/sparklet/vocab"
)

// WebhookNamespace stands for the namespace sparklet is installed in; the
// webhook configuration excludes it, as the chart does.
const WebhookNamespace = "sparklet-system"

// ConfigName is the MutatingWebhookConfiguration's name.
const ConfigName = "sparklet"

// Options configure an Env.
type Options struct {
	BinDir     string // sparklet and the control-plane binaries
	Dir        string // state, certificates and logs
	PolicyFile string // passed to the webhook with --policy
	// WebhookArgs are extra `sparklet webhook` flags.
	WebhookArgs []string
	// ReapKeptExecutors runs the webhook with --reap-kept-executors in
	// every namespace, with the cluster's admin kubeconfig, as the chart
	// does when its policy keeps failed executors.
	ReapKeptExecutors bool
	// APIServerFlags are extra kube-apiserver flags.
	APIServerFlags []string
	// SchedulerFlags are extra kube-scheduler flags.
	SchedulerFlags []string
	// Detach leaves the cluster and the webhook running after the caller
	// exits; cluster.Down(Dir + "/cluster") stops them.
	Detach bool
	// PodRunner runs real pods: a pod runner registers the node RunnerNode,
	// whose pods run as local processes with the Spark images mapped to the
	// distributions in BinDir/spark. kwok and its fake nodes are not
	// started, so every pod lands on that node, unless Kwok is set.
	PodRunner bool
	// Kwok, with PodRunner, starts kwok and its fake nodes as well, and
	// taints RunnerNode with RunnerTaint: pods land on the fake nodes
	// unless they name RunnerNode (spec.nodeName) or tolerate the taint.
	// Without PodRunner, kwok always runs.
	Kwok bool
	// ImageConfDir, with PodRunner, is the $SPARK_HOME/conf of the
	// sparkimage.ConfImageRepo images.
	ImageConfDir string
}

// RunnerNode is the pod runner's node.
const RunnerNode = "runner-1"

// RunnerTaint keeps the scheduler's pods off RunnerNode when kwok's fake
// nodes run too (Options.Kwok).
var RunnerTaint = corev1.Taint{Key: "sparklet.io/podrunner", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// Env is a running control plane with the sparklet webhook registered.
type Env struct {
	Cluster *cluster.Cluster
	// Runner is the pod runner when Options.PodRunner is set.
	Runner  *podrunner.Runner
	Client  kubernetes.Interface
	opts    Options
	port    int
	webhook *exec.Cmd
	exited  <-chan struct{}
	certDir string
}

// Start brings up the control plane and the webhook and waits until the
// API server calls the webhook.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	copts := cluster.Options{BinDir: opts.BinDir, Dir: filepath.Join(opts.Dir, "cluster"), APIServerFlags: opts.APIServerFlags, SchedulerFlags: opts.SchedulerFlags, Detach: opts.Detach}
	var runner *podrunner.Runner
	if opts.PodRunner {
		// The runner goes first: the API server's certificate must name its
		// bridge address, through which pods reach the API server.
		log, err := os.OpenFile(filepath.Join(opts.Dir, "podrunner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		ropts := podrunner.Options{NodeName: RunnerNode, Dir: filepath.Join(opts.Dir, "pods"),
			Images: sparkimage.Resolver(opts.BinDir, opts.ImageConfDir), Log: log, SyncPeriod: 2 * time.Second}
		if opts.Kwok {
			ropts.Taints = []corev1.Taint{RunnerTaint}
		}
		runner, err = podrunner.New(ropts)
		if err != nil {
			log.Close()
			return nil, fmt.Errorf("start pod runner: %w", err)
		}
		copts.ExtraSANs, copts.NoKwok = []string{runner.HostIP()}, !opts.Kwok
	}
	c, err := cluster.Start(ctx, copts)
	if err != nil {
		if runner != nil {
			runner.Stop()
		}
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	e := &Env{Cluster: c, Runner: runner, Client: c.Client(), opts: opts, certDir: filepath.Join(opts.Dir, "webhook-certs")}
	if runner != nil {
		if err := runner.Start(ctx, c.RESTConfig()); err != nil {
			e.Stop()
			return nil, fmt.Errorf("start pod runner: %w", err)
		}
	}
	if err := e.setUp(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) setUp(ctx context.Context) error {
	if err := os.MkdirAll(e.certDir, 0o700); err != nil {
		return err
	}
	if err := e.IssueCert(); err != nil {
		return err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	e.port = port
	if err := e.StartWebhook(ctx); err != nil {
		return err
	}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: WebhookNamespace, Labels: map[string]string{webhookconfig.NamespaceLabel: webhookconfig.NamespaceOptIn},
	}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", WebhookNamespace, err)
	}
	caPEM, _ := e.Cluster.CA()
	url := fmt.Sprintf("https://127.0.0.1:%d%s", e.port, webhookconfig.Path)
	mwc := webhookconfig.Build(ConfigName, admissionv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
		[]string{WebhookNamespace, "kube-system"})
	if _, err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register webhook: %w", err)
	}
	return e.waitCalled(ctx)
}

// waitCalled waits until a dry-run driver pod comes back injected: the API
// server has picked up the webhook configuration.
func (e *Env) waitCalled(ctx context.Context) error {
	ns := "sparklet-probe"
	if err := e.CreateNamespace(ctx, ns, true); err != nil {
		return err
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{vocab.LabelRole: "driver"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:3.5.4"}}},
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := e.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err
			return false, nil
		}
		return len(got.Spec.InitContainers) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not call the webhook (last error: %v): %w", last, err)
	}
	return nil
}

// PodSecurityLabel is Pod Security admission's enforce label.
const PodSecurityLabel = "pod-security.kubernetes.io/enforce"

// DriverServiceAccount is the driver service account the Helm chart
// creates in each opted-in namespace it lists, and examples/policy.yaml
// names as the default.
const DriverServiceAccount = "spark-driver"

// CreateNamespace creates a namespace. When optIn is set it labels it for
// injection and, as the chart does, creates the driver service account and
// binds it to what the sidecar needs.
func (e *Env) CreateNamespace(ctx context.Context, name string, optIn bool) error {
	// Pod Security's baseline level, enforced as hardened clusters do.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{PodSecurityLabel: "baseline"}}}
	if optIn {
		ns.Labels[webhookconfig.NamespaceLabel] = webhookconfig.NamespaceOptIn
	}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	if optIn {
		if err := e.driverRBAC(ctx, name); err != nil {
			return err
		}
	}
	// Pods need the namespace's default service account.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// CertFile and KeyFile are where the webhook's serving certificate lives.
func (e *Env) CertFile() string { return filepath.Join(e.certDir, "tls.crt") }
func (e *Env) KeyFile() string  { return filepath.Join(e.certDir, "tls.key") }

// IssueCert writes a new serving certificate for 127.0.0.1 from the
// cluster's CA, replacing the files atomically.
func (e *Env) IssueCert() error {
	cert, key, err := e.Cluster.IssueServingCert("127.0.0.1", "localhost")
	if err != nil {
		return fmt.Errorf("issue webhook certificate: %w", err)
	}
	for path, data := range map[string][]byte{e.KeyFile(): key, e.CertFile(): cert} {
		if err := atomicfile.Write(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// ServedCert returns the leaf certificate the webhook presents now.
func (e *Env) ServedCert() (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", e.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// Addr is the webhook's listen address.
func (e *Env) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.port)) }

// LogFile is the webhook process's log.
func (e *Env) LogFile() string { return filepath.Join(e.opts.Dir, "webhook.log") }

// StartWebhook runs `sparklet webhook` and waits until it is ready.
func (e *Env) StartWebhook(ctx context.Context) error {
	args := []string{"webhook", "--listen", e.Addr(), "--tls-cert-file", e.CertFile(), "--tls-key-file", e.KeyFile(),
		"--reload-interval", "1s"}
	if e.opts.PolicyFile != "" {
		args = append(args, "--policy", e.opts.PolicyFile)
	}
	if e.opts.ReapKeptExecutors {
		args = append(args, "--reap-kept-executors", "--kubeconfig", e.Cluster.Kubeconfig())
	}
	args = append(args, e.opts.WebhookArgs...)
	cmd, exited, err := cluster.Spawn(filepath.Join(e.opts.BinDir, "sparklet"), args, e.LogFile(), e.opts.Detach)
	if err != nil {
		return err
	}
	e.webhook, e.exited = cmd, exited
	if e.opts.Detach {
		if err := e.Cluster.Adopt("sparklet-webhook", cmd.Process.Pid); err != nil {
			return err
		}
	}

	err = ready.Wait(ctx, "https://"+e.Addr()+"/readyz", 100*time.Millisecond, 30*time.Second, func() error {
		select {
		case <-e.exited:
			return fmt.Errorf("webhook exited; log %s:\n%s", e.LogFile(), cluster.Tail(e.LogFile(), 20))
		default:
			return nil
		}
	})
	if err != nil {
		return fmt.Errorf("webhook not ready: %w", err)
	}
	return nil
}

// WebhookPID is the webhook process's, or 0 when it is not running.
func (e *Env) WebhookPID() int {
	if e.webhook == nil {
		return 0
	}
	return e.webhook.Process.Pid
}

// StopWebhook stops the webhook process and waits for it to exit.
func (e *Env) StopWebhook() {
	if e.webhook == nil {
		return
	}
	cluster.Terminate(e.webhook.Process.Pid, e.exited)
	e.webhook = nil
}

// Stop stops the pod runner, the webhook and the control plane.
func (e *Env) Stop() {
	if e.Runner != nil {
		e.Runner.Stop()
	}
	e.StopWebhook()
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
}

// Kubectl runs kubectl against the cluster and returns stdout and stderr.
func (e *Env) Kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	return e.Cluster.Kubectl(ctx, stdin, args...)
}

// driverRBAC grants the driver service account what the chart's driver
// ClusterRole grants: the sidecar acts with it.
func (e *Env) driverRBAC(ctx context.Context, ns string) error {
	cs := e.Client
	all := []string{"get", "list", "watch", "create", "delete", "deletecollection", "patch"}
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DriverServiceAccount}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sparklet-driver"}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "persistentvolumeclaims"}, Verbs: all},
				{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
				{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"list"}},
				{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "create", "patch", "delete", "deletecollection"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sparklet-driver"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sparklet-driver"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: DriverServiceAccount, Namespace: ns}}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("driver RBAC in %s: %w", ns, err)
		}
	}
	return nil
}
