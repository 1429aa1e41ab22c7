package sidecar

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/internal/profiling"
	"github.com/sparklet/sparklet/patches"
)

// hubSize is how many recent events a watch can resume from.
const hubSize = 8192

// Sidecar is one running sidecar.
type Sidecar struct {
	cfg     Config
	client  kubernetes.Interface
	log     *logrus.Entry
	metrics *metrics
	appID   string
	events  *recorder
	ready   chan struct{}
	addr    string // where the JVM's API listens, once ready
}

// APIAddr is the address the JVM's API listens on; valid once Ready.
func (s *Sidecar) APIAddr() string { return s.addr }

// New returns a sidecar for a validated config.
func New(cfg Config, log *logrus.Entry) *Sidecar {
	return &Sidecar{cfg: cfg, log: log, metrics: newMetrics(), ready: make(chan struct{})}
}

// WrapTransport counts the sidecar's own API requests in its metrics; use
// it with rest.Config.Wrap.
func (s *Sidecar) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{next: rt, metrics: s.metrics}
}

// Ready is closed once the sidecar serves the JVM.
func (s *Sidecar) Ready() <-chan struct{} { return s.ready }

// Run starts the sidecar and returns when the driver has ended and its
// executors are cleaned up (nil), when ctx ends (after cleaning up, as the
// kubelet stops a native sidecar once the driver exits), or on error.
func (s *Sidecar) Run(ctx context.Context, client kubernetes.Interface) error {
	s.client = client
	pol, err := s.cfg.Policy()
	if err != nil {
		return err
	}
	m := s.metrics
	metricsLn, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("SPARKLET_METRICS_LISTEN %s: %w", s.cfg.MetricsListen, err)
	}
	metricsSrv := &http.Server{Handler: s.metricsHandler(m), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = metricsSrv.Serve(metricsLn) }()
	defer metricsSrv.Close()

	own, err := s.client.CoreV1().Pods(s.cfg.Namespace).Get(ctx, s.cfg.PodName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read own pod %s/%s: %w", s.cfg.Namespace, s.cfg.PodName, err)
	}
	s.appID = own.Labels[patches.LabelAppID]
	if s.appID == "" {
		return fmt.Errorf("pod %s has no %s label: it was not injected by the sparklet webhook", own.Name, patches.LabelAppID)
	}
	s.log = s.log.WithField("app", s.appID)
	s.events = &recorder{client: s.client, driver: own, log: s.log}
	if want := s.cfg.ConfSHA256; want != "" && patches.ConfDigest(own.Annotations[patches.AnnotationEffectiveConf]) != want {
		msg := fmt.Sprintf("annotation %s was changed after admission, so the JVM would run with a configuration the webhook did not check; recreate the pod to change its configuration",
			patches.AnnotationEffectiveConf)
		s.events.warning("ConfigurationTampered", msg)
		return errors.New(msg)
	}

	token, err := writeToken(s.cfg.TokenFile)
	if err != nil {
		return err
	}

	st := &state{namespace: s.cfg.Namespace, driverName: s.cfg.PodName}
	informerCtx, stopInformers := context.WithCancel(context.Background())
	defer stopInformers()
	execFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = patches.LabelAppID + "=" + s.appID + "," + patches.LabelRole + "=executor"
		}))
	ownFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.cfg.PodName).String()
		}))
	execInf := execFactory.Core().V1().Pods().Informer()
	ownInf := ownFactory.Core().V1().Pods().Informer()
	st.executors = &source{store: execInf.GetStore(), hub: newHub(hubSize), keep: func(p *corev1.Pod) bool {
		return p.Labels[patches.LabelAppID] == s.appID && p.Labels[patches.LabelRole] == "executor"
	}}
	st.driverSource = &source{store: ownInf.GetStore(), hub: newHub(256), keep: func(p *corev1.Pod) bool {
		return p.Name == s.cfg.PodName
	}}
	if _, err := execInf.AddEventHandler(st.executors.hub.handler()); err != nil {
		return err
	}
	if _, err := ownInf.AddEventHandler(st.driverSource.hub.handler()); err != nil {
		return err
	}
	ended := make(chan struct{})
	var endOnce sync.Once
	if _, err := ownInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.checkEnded(obj, ended, &endOnce) },
		UpdateFunc: func(_, obj any) { s.checkEnded(obj, ended, &endOnce) },
	}); err != nil {
		return err
	}
	execFactory.Start(informerCtx.Done())
	ownFactory.Start(informerCtx.Done())
	for typ, ok := range execFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("executor informer %v did not sync", typ)
		}
	}
	for typ, ok := range ownFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("driver informer %v did not sync", typ)
		}
	}
	m.watchPhases(st)

	api := &API{
		namespace: s.cfg.Namespace, appID: s.appID, driver: s.cfg.PodName, token: token, client: s.client,
		state: st, metrics: m, log: s.log, server: serverVersion(s.client),
	}
	api.alloc = newAllocator(s.client, st, pol, s.appID, s.events, m, s.log)
	cert, err := selfSignedCert(filepath.Join(filepath.Dir(s.cfg.TokenFile), "ca.crt"))
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	plain, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("SPARKLET_LISTEN %s: %w", s.cfg.Listen, err)
	}
	ln := &eitherListener{Listener: plain, tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	s.addr = ln.Addr().String()
	close(s.ready)
	s.log.WithFields(logrus.Fields{"listen": ln.Addr().String(), "executors": len(st.executors.store.List())}).Info("serving the JVM")
	s.events.normal("SidecarReady", fmt.Sprintf("serving the Spark driver on %s for application %s", ln.Addr(), s.appID))

	select {
	case <-ended:
		return s.cleanupAndReport("the Spark container ended")
	case <-ctx.Done():
		return s.cleanupAndReport("the sidecar was asked to stop")
	}
}

func (s *Sidecar) checkEnded(obj any, ended chan struct{}, once *sync.Once) {
	if pod, ok := obj.(*corev1.Pod); ok && sparkTerminated(pod, s.cfg.SparkContainer) {
		once.Do(func() { close(ended) })
	}
}

func (s *Sidecar) metricsHandler(m *metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		profiling.Register(mux)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-s.ready:
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "starting: the token is not written or the cache is not synced yet", http.StatusServiceUnavailable)
		}
	})
	return mux
}

// writeToken writes the JVM's random per-pod token atomically. The file is
// world-readable inside a volume only the sidecar and the Spark container
// mount, because the JVM runs as another user (185 in apache/spark). A
// restarted sidecar keeps the token it finds: the JVM read it once, at
// start (SparkKubernetesClientFactory), and cannot pick up a new one.
func writeToken(path string) ([]byte, error) {
	if old, err := os.ReadFile(path); err == nil && len(old) == 64 {
		if _, err := hex.DecodeString(string(old)); err == nil {
			return old, nil
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate token: %w", err)
	}
	token := []byte(hex.EncodeToString(b))
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, token, 0o444); err != nil {
		return nil, fmt.Errorf("write token %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write token %s: %w", path, err)
	}
	return token, nil
}

func serverVersion(client kubernetes.Interface) *version.Info {
	if v, err := client.Discovery().ServerVersion(); err == nil && v != nil {
		return v
	}
	return &version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.0"}
}
