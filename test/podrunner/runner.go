package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options configure a runner.
type Options struct {
	// NodeName is the Node the runner registers and whose pods it runs.
	NodeName string
	// Dir holds the pods' volumes (Dir/pods) and container logs (Dir/logs).
	Dir string
	// Images maps the pods' image references to local images.
	Images ImageResolver
	// Bridge and Subnet name the pods' bridge and its IPv4 /24. Empty, the
	// runner takes the first free sparklet-br<N> with 10.213.N.0/24.
	Bridge, Subnet string
	// Capacity is the node's capacity and allocatable; empty, cpu 16,
	// memory 32Gi, pods 110.
	Capacity corev1.ResourceList
	// Labels and Taints are added to the Node.
	Labels map[string]string
	Taints []corev1.Taint
	// RestartBackoff is the delay before a container's first restart; it
	// doubles with each restart up to MaxRestartBackoff. Defaults 1s, 30s
	// (the kubelet's are 10s and 5m).
	RestartBackoff, MaxRestartBackoff time.Duration
	// SyncPeriod is how often ConfigMap, Secret, downward API and token
	// volumes are refreshed (also on every pod update). Default 10s.
	SyncPeriod time.Duration
	// Log receives the runner's own log; default os.Stderr.
	Log io.Writer
}

// Runner is a node whose pods run as local processes.
type Runner struct {
	opts   Options
	net    *network
	proxy  *proxy
	client kubernetes.Interface
	log    *log.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	pods map[types.UID]*podWorker
	// done are the pods whose worker has ended; late events are ignored.
	done    map[types.UID]bool
	stopped bool
}

// New checks the options and takes the pods' network: a bridge and a
// subnet of its own. The bridge address (HostIP) must be among the API
// server certificate's IP SANs before Start.
func New(opts Options) (*Runner, error) {
	if opts.NodeName == "" || opts.Dir == "" || opts.Images == nil {
		return nil, errors.New("podrunner: NodeName, Dir and Images are required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.Capacity == nil {
		opts.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if opts.RestartBackoff == 0 {
		opts.RestartBackoff = time.Second
	}
	if opts.MaxRestartBackoff == 0 {
		opts.MaxRestartBackoff = 30 * time.Second
	}
	if opts.SyncPeriod == 0 {
		opts.SyncPeriod = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	for _, sub := range []string{"pods", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	n, err := reserveNetwork(opts.Bridge, opts.Subnet)
	if err != nil {
		return nil, fmt.Errorf("podrunner: %w", err)
	}
	return &Runner{opts: opts, net: n, log: log.New(opts.Log, "podrunner: ", log.LstdFlags|log.Lmicroseconds),
		pods: map[types.UID]*podWorker{}, done: map[types.UID]bool{}}, nil
}

// HostIP is the bridge address: the pods' hostIP, the node's InternalIP and
// where pods reach the API server.
func (r *Runner) HostIP() string { return r.net.hostIP.String() }

// Start registers the node, starts the API proxy and runs the node's pods
// until Stop. It returns once the node is Ready and schedulable.
func (r *Runner) Start(ctx context.Context, cfg *rest.Config) error {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return fmt.Errorf("podrunner: API server address %q: want https://host:port", cfg.Host)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	if r.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if r.proxy, err = startProxy(net.JoinHostPort(r.HostIP(), "0"), u.Host); err != nil {
		return fmt.Errorf("podrunner: API proxy: %w", err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.registerNode(ctx); err != nil {
		return err
	}
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.heartbeat() }()

	factory := informers.NewSharedInformerFactoryWithOptions(r.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", r.opts.NodeName).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.podChanged(obj) },
		UpdateFunc: func(_, obj any) { r.podChanged(obj) },
		DeleteFunc: func(obj any) { r.podGone(obj) },
	}); err != nil {
		return err
	}
	factory.Start(r.ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("podrunner: pod informer did not sync")
	}
	return r.waitSchedulable(ctx)
}

// APIServerPort is the proxy's port on HostIP.
func (r *Runner) APIServerPort() int { return r.proxy.port() }

func (r *Runner) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.done[pod.UID] {
		return
	}
	if w, ok := r.pods[pod.UID]; ok {
		w.update(pod)
		return
	}
	w := newPodWorker(r, pod)
	r.pods[pod.UID] = w
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		w.run()
		r.mu.Lock()
		delete(r.pods, pod.UID)
		r.done[pod.UID] = true
		r.mu.Unlock()
	}()
}

// podGone handles a pod deleted from the API before the runner deleted it
// (a forced deletion): its processes are killed at once.
func (r *Runner) podGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	w := r.pods[pod.UID]
	r.mu.Unlock()
	if w != nil {
		w.gone()
	}
}

// Stop ends every pod's processes (SIGTERM, then SIGKILL after 2 seconds),
// waits for them, and removes the pods' namespaces, volumes and the bridge.
// Logs stay in Dir/logs. The Node object stays; its lease expires.
func (r *Runner) Stop() {
	r.mu.Lock()
	r.stopped = true
	workers := make([]*podWorker, 0, len(r.pods))
	for _, w := range r.pods {
		workers = append(workers, w)
	}
	r.mu.Unlock()
	for _, w := range workers {
		w.shutdown()
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.proxy != nil {
		r.proxy.close()
	}
	r.net.close()
}

// LogPath is the log file of a container of the newest pod named ns/pod
// that ran here: <Dir>/logs/<ns>_<pod>_<uid>/<container>.log. It is empty
// if no such pod ran.
func (r *Runner) LogPath(ns, pod, container string) string {
	dirs, _ := filepath.Glob(filepath.Join(r.opts.Dir, "logs", ns+"_"+pod+"_*"))
	type entry struct {
		dir string
		mod time.Time
	}
	var es []entry
	for _, d := range dirs {
		if info, err := os.Stat(d); err == nil {
			es = append(es, entry{d, info.ModTime()})
		}
	}
	if len(es) == 0 {
		return ""
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
	return filepath.Join(es[0].dir, container+".log")
}

func (r *Runner) logDir(pod *corev1.Pod) string {
	return filepath.Join(r.opts.Dir, "logs", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

func (r *Runner) allocatable() corev1.ResourceList { return r.opts.Capacity }

func (r *Runner) configMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return r.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (r *Runner) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return r.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
