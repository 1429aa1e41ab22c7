package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/test/ready"
)

// AdmissionPlugins are the kube-apiserver's admission plugins: the ones
// hardened clusters run, so that what such a cluster refuses is refused here
// first. OwnerReferencesPermissionEnforcement refuses blockOwnerDeletion
// without update on the owner's finalizers (as OpenShift does); PodSecurity
// enforces the namespaces' pod-security.kubernetes.io labels; NodeRestriction
// is what the CIS benchmark asks for.
var AdmissionPlugins = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction",
	"OwnerReferencesPermissionEnforcement", "PodSecurity",
	"DefaultTolerationSeconds", "Priority", "ResourceQuota",
	"MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
}

// Nodes are the fake nodes kwok manages; each takes 3000 small pods, so
// the bench can run 5000 executors for one driver.
var Nodes = []string{"kwok-node-1", "kwok-node-2"}

// Options configure a cluster.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwok-stages/.
	BinDir string
	// Dir holds certificates, data and one log per component.
	Dir string
	// APIServerFlags are extra kube-apiserver flags, e.g. feature gates.
	APIServerFlags []string
	// SchedulerFlags are extra kube-scheduler flags, e.g. --kube-api-qps.
	SchedulerFlags []string
	// ExtraSANs are more IP addresses or DNS names for the API server's
	// serving certificate, e.g. a pod runner's bridge address.
	ExtraSANs []string
	// NoKwok starts neither kwok nor its fake nodes: every pod then goes
	// to a node the caller brings, such as a pod runner's.
	NoKwok bool
	// Detach leaves the components running after the caller exits (for
	// `make cluster-up`); Stop or Down ends them.
	Detach bool
}

// Cluster is a running control plane.
type Cluster struct {
	opts       Options
	ca         *authority
	kubeconfig string
	config     *rest.Config
	client     kubernetes.Interface
	procs      []*process
	extra      []adopted
	apiArgs    []string
}

type process struct {
	name string
	cmd  *exec.Cmd
	done <-chan struct{}
}

// state is what Attach and Down read back from Dir.
type state struct {
	PIDs map[string]int `json:"pids"`
}

// Start brings the control plane up and returns once the API server is
// ready, the nodes are Ready and the default service account exists.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	for _, sub := range []string{"pki", "etcd", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: build it with hack/cluster/build.sh (make cluster-binaries)", bin, opts.BinDir)
		}
	}
	c := &Cluster{opts: opts}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.opts.Dir}, parts...)...)
}

func (c *Cluster) start(ctx context.Context) error {
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kwokPort := ports[0], ports[1], ports[2], ports[3]

	if c.ca, err = newAuthority("sparklet-local-ca"); err != nil {
		return err
	}
	serverCert, serverKey, err := c.ca.issue("kube-apiserver", nil,
		append([]string{"127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}, c.opts.ExtraSANs...), false)
	if err != nil {
		return err
	}
	adminCert, adminKey, err := c.ca.issue("sparklet-admin", []string{"system:masters"}, nil, true)
	if err != nil {
		return err
	}
	// The API server's client certificate for kubelets (logs, exec,
	// port-forward on a real node); kwok's nodes do not ask for one.
	kubeletClientCert, kubeletClientKey, err := c.ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, true)
	if err != nil {
		return err
	}
	frontProxy, err := c.frontProxy()
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKeys()
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{
		c.path("pki", "ca.crt"): c.ca.CertPEM, c.path("pki", "ca.key"): c.ca.KeyPEM,
		c.path("pki", "apiserver.crt"): serverCert, c.path("pki", "apiserver.key"): serverKey,
		c.path("pki", "sa.key"): saKey, c.path("pki", "sa.pub"): saPub,
		c.path("pki", "kubelet-client.crt"): kubeletClientCert, c.path("pki", "kubelet-client.key"): kubeletClientKey,
		c.path("pki", "front-proxy-ca.crt"):     frontProxy.ca,
		c.path("pki", "front-proxy-client.crt"): frontProxy.cert, c.path("pki", "front-proxy-client.key"): frontProxy.key,
	}); err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.kubeconfig = c.path("kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, server, c.ca.CertPEM, adminCert, adminKey); err != nil {
		return err
	}
	if c.config, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig); err != nil {
		return err
	}
	c.config.QPS, c.config.Burst = 200, 400
	if c.client, err = kubernetes.NewForConfig(c.config); err != nil {
		return err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := c.run("etcd", "--data-dir", c.path("etcd"), "--name", "local",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "local="+peerURL, "--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health"); err != nil {
		return err
	}

	apiArgs := []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort),
		"--cert-dir", c.path("pki"),
		"--tls-cert-file", c.path("pki", "apiserver.crt"), "--tls-private-key-file", c.path("pki", "apiserver.key"),
		"--client-ca-file", c.path("pki", "ca.crt"),
		"--kubelet-client-certificate", c.path("pki", "kubelet-client.crt"), "--kubelet-client-key", c.path("pki", "kubelet-client.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", c.path("pki", "sa.pub"),
		"--service-account-signing-key-file", c.path("pki", "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", strings.Join(AdmissionPlugins, ","),
		"--allow-privileged",
		"--endpoint-reconciler-type", "none",
		"--profiling=false",
		// The aggregation layer's front proxy, with the values kubeadm
		// always gives (k8s.io/kubernetes v1.37.2, cmd/kubeadm/app/phases/
		// controlplane/manifests.go): the API server proxies an
		// APIService's requests (metrics-server's metrics.k8s.io) with
		// this client certificate and the user in X-Remote-* headers.
		"--requestheader-client-ca-file", c.path("pki", "front-proxy-ca.crt"),
		"--requestheader-allowed-names", frontProxyClient,
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", c.path("pki", "front-proxy-client.crt"),
		"--proxy-client-key-file", c.path("pki", "front-proxy-client.key"),
	}
	c.apiArgs = append(apiArgs, c.opts.APIServerFlags...)
	if err := c.run("kube-apiserver", c.apiArgs...); err != nil {
		return err
	}
	if err := c.waitReady(ctx); err != nil {
		return err
	}

	if err := c.run("kube-controller-manager", "--kubeconfig", c.kubeconfig,
		"--leader-elect=false", "--secure-port", "0",
		"--service-account-private-key-file", c.path("pki", "sa.key"),
		"--root-ca-file", c.path("pki", "ca.crt"),
		"--use-service-account-credentials=false",
		// No cloud: pod IPs come from kwok, not node IPAM. The node
		// lifecycle controller stays: it lifts the not-ready taint once
		// kwok reports the nodes Ready, and kwok renews their leases.
		"--controllers", "*,-node-ipam-controller",
		"--concurrent-gc-syncs", "10"); err != nil {
		return err
	}
	if err := c.run("kube-scheduler", append([]string{"--kubeconfig", c.kubeconfig, "--leader-elect=false", "--secure-port", "0"}, c.opts.SchedulerFlags...)...); err != nil {
		return err
	}
	if c.opts.NoKwok {
		return c.finish(ctx)
	}
	stages, err := filepath.Glob(filepath.Join(c.opts.BinDir, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no kwok stage files in %s: rebuild with hack/cluster/build.sh", filepath.Join(c.opts.BinDir, "kwok-stages"))
	}
	if err := c.run("kwok", "--kubeconfig", c.kubeconfig,
		"--config", strings.Join(stages, ","),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
		"--cidr", "10.244.0.0/16", "--node-ip", "127.0.0.1",
		"--server-address", "127.0.0.1:"+strconv.Itoa(kwokPort),
		"--node-lease-duration-seconds", "40"); err != nil {
		return err
	}
	if err := c.createNodes(ctx); err != nil {
		return err
	}
	return c.finish(ctx)
}

// finish records the processes and waits for the default service account,
// which pods need.
func (c *Cluster) finish(ctx context.Context) error {
	if err := c.saveState(); err != nil {
		return err
	}
	return c.waitFor(ctx, "the default service account", 2*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// run starts one component, logging to logs/<name>.log.
func (c *Cluster) run(name string, args ...string) error {
	cmd, done, err := Spawn(filepath.Join(c.opts.BinDir, name), args, c.path("logs", name+".log"), c.opts.Detach)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, &process{name: name, cmd: cmd, done: done})
	return nil
}

func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range c.procs {
			select {
			case <-p.done:
				return false, fmt.Errorf("%s exited:\n%s", p.name, c.LogTail(p.name, 30))
			default:
			}
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

func (c *Cluster) waitHTTP(ctx context.Context, what, url string) error {
	return c.waitFor(ctx, what, time.Minute, func(context.Context) (bool, error) { return ready.OK(url), nil })
}

func (c *Cluster) waitReady(ctx context.Context) error {
	return c.waitFor(ctx, "kube-apiserver /readyz", 2*time.Minute, func(ctx context.Context) (bool, error) {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// createNodes registers the fake nodes and waits until kwok reports them Ready.
// KwokNode is a fake node that kwok runs pods on, with capacity as its
// capacity and allocatable.
func KwokNode(name string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

func (c *Cluster) createNodes(ctx context.Context) error {
	capacity := corev1.ResourceList{
		corev1.ResourcePods:   resource.MustParse("3000"),
		corev1.ResourceCPU:    resource.MustParse("3000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
	}
	for _, name := range Nodes {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, KwokNode(name, capacity), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	return c.waitFor(ctx, "kwok nodes Ready and untainted", 2*time.Minute, func(ctx context.Context) (bool, error) {
		for _, name := range Nodes {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(n) || len(n.Spec.Taints) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Kubeconfig is the admin kubeconfig's path.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig is an admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// Client is an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// CA returns the cluster CA's certificate and key in PEM.
func (c *Cluster) CA() (certPEM, keyPEM []byte) { return c.ca.CertPEM, c.ca.KeyPEM }

// IssueServingCert issues a serving certificate from the cluster CA, which
// the API server trusts with the CA as caBundle.
func (c *Cluster) IssueServingCert(hosts ...string) (certPEM, keyPEM []byte, err error) {
	return c.ca.issue(hosts[0], nil, hosts, false)
}

// IssueClientCert issues a client certificate from the cluster CA for the
// user cn in the given groups, e.g. a kubelet's system:node:NAME.
func (c *Cluster) IssueClientCert(cn string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return c.ca.issue(cn, groups, nil, true)
}

// WriteKubeconfig writes a kubeconfig for the client certificate cert to
// path, reaching the API server at server (https://host:port), or at the
// address the admin kubeconfig uses when server is empty.
func (c *Cluster) WriteKubeconfig(path, server string, cert, key []byte) error {
	if server == "" {
		server = c.config.Host
	}
	return writeKubeconfig(path, server, c.ca.CertPEM, cert, key)
}

// APIServerPort is the port kube-apiserver serves on.
func (c *Cluster) APIServerPort() (int, error) {
	u, err := url.Parse(c.config.Host)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Port())
}

// Dir is where the cluster keeps its files; logs are in Dir/logs.
func (c *Cluster) Dir() string { return c.opts.Dir }

// LogTail returns the last n lines of a component's log.
func (c *Cluster) LogTail(component string, n int) string {
	return Tail(c.path("logs", component+".log"), n)
}

// Stop ends every component, newest first, and waits for them.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		Terminate(c.procs[i].cmd.Process.Pid, c.procs[i].done)
	}
	c.procs = nil
	_ = os.Remove(c.path("state.json"))
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling restart
// does), starts it again with the same flags and waits until it is ready.
// Clients see refused connections in between.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	for i, p := range c.procs {
		if p.name != "kube-apiserver" {
			continue
		}
		Terminate(p.cmd.Process.Pid, p.done)
		cmd, done, err := Spawn(filepath.Join(c.opts.BinDir, p.name), c.apiArgs, c.path("logs", p.name+".log"), c.opts.Detach)
		if err != nil {
			return err
		}
		c.procs[i] = &process{name: p.name, cmd: cmd, done: done}
		if err := c.saveState(); err != nil {
			return err
		}
		return c.waitReady(ctx)
	}
	return fmt.Errorf("kube-apiserver is not running")
}

// Adopt records another process (say, a webhook) so that Down stops it
// with the cluster.
func (c *Cluster) Adopt(name string, pid int) error {
	c.extra = append(c.extra, adopted{name, pid})
	return c.saveState()
}

type adopted struct {
	name string
	pid  int
}

func (c *Cluster) saveState() error {
	s := state{PIDs: map[string]int{}}
	for _, p := range c.procs {
		s.PIDs[p.name] = p.cmd.Process.Pid
	}
	for _, p := range c.extra {
		s.PIDs[p.name] = p.pid
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(c.path("state.json"), data, 0o644)
}

// Down stops a detached cluster started in dir.
func Down(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no cluster is running in %s", dir)
	}
	if err != nil {
		return err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "state.json"), err)
	}
	order := []string{"kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}
	for name := range s.PIDs {
		if !slices.Contains(order, name) {
			order = append([]string{name}, order...) // adopted processes first
		}
	}
	for _, name := range order {
		if pid, ok := s.PIDs[name]; ok {
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			deadline := time.Now().Add(10 * time.Second)
			for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // polling a foreign process's exit; there is no event to wait on
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	return os.Remove(filepath.Join(dir, "state.json"))
}

func writeKubeconfig(path, server string, ca, cert, key []byte) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, server, b64(ca), b64(cert), b64(key))
	return os.WriteFile(path, []byte(cfg), 0o600)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
