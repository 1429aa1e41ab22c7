package sidecar

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// Sidecar is one running sidecar.
type Sidecar struct {
	cfg     Config
	client  kubecore.Interface
	log     *logrus.Entry
	metrics *metrics
	appID   string               // the pod's spark-app-selector
	apps    *apps                // the application the JVM runs
	driver  *patches.DriverFacts // as read and checked at start
	events  *recorder
	api     *API // once prepared
	ready   chan struct{}
	addr    string // where the JVM's API listens, once ready
	// endWait is how long a sidecar asked to stop waits for the Spark
	// container's end (endStatusWait).
	endWait time.Duration
}

// APIAddr is the address the JVM's API listens on; valid once Ready.
func (s *Sidecar) APIAddr() string { return s.addr }

// New returns a sidecar for a validated config.
func New(cfg Config, log *logrus.Entry) *Sidecar {
	return &Sidecar{cfg: cfg, log: log, metrics: newMetrics(), ready: make(chan struct{}), endWait: endStatusWait}
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
func (s *Sidecar) Run(ctx context.Context, client kubecore.Interface) error {
	s.client = client
	pol, err := s.effectivePolicy()
	if err != nil {
		return err
	}
	stopMetrics, err := s.serveMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics()
	informerCtx, stopInformers := context.WithCancel(context.Background())
	defer stopInformers()
	api, ended, err := s.prepare(ctx, informerCtx.Done(), pol)
	if err != nil {
		return err
	}
	s.api = api
	stopAPI, err := s.serve(api)
	if err != nil {
		return err
	}
	defer stopAPI()
	exposeUI(ctx, s.client, s.driver, pol, s.appID, s.events)
	logs, err := s.shipEventLogs(pol)
	if err != nil {
		return err
	}
	err = s.wait(ctx, ended)
	s.finishEventLogs(logs)
	return err
}

// effectivePolicy is the policy the webhook recorded, with the built-in
// values wherever it is silent.
func (s *Sidecar) effectivePolicy() (*policy.Effective, error) {
	pol, err := s.cfg.Policy()
	if err != nil {
		return nil, err
	}
	pol.Sidecar.SetDefaults(version.Version)
	return pol, nil
}

// prepare does what must happen before the JVM is served: it reads the
// driver pod, writes the JVM's token and fills the informer cache. The
// informers run until stopInformers is closed; ended is closed when the
// Spark container ends.
func (s *Sidecar) prepare(ctx context.Context, stopInformers <-chan struct{}, pol *policy.Effective) (*API, <-chan struct{}, error) {
	if err := s.readDriver(ctx); err != nil {
		return nil, nil, err
	}
	token, err := writeToken(s.cfg.TokenFile)
	if err != nil {
		return nil, nil, err
	}
	st, ended, err := s.startInformers(ctx, stopInformers, pol)
	if err != nil {
		return nil, nil, err
	}
	s.metrics.watchPhases(st)
	api := &API{
		namespace: s.cfg.Namespace, apps: s.apps, driver: s.cfg.PodName, token: token, client: s.client,
		state: st, metrics: s.metrics, log: s.log, server: serverVersion(ctx, s.client),
	}
	api.alloc = newAllocator(s.client, st, s.driver, pol, s.cfg.Namespace, s.apps, s.events, s.metrics, s.log)
	api.keeper = newKeeper(s.client, s.cfg.Namespace, pol.KeepFailedExecutorsSeconds, s.log)
	return api, ended, nil
}

// readDriver reads the driver pod for the application it belongs to, and
// refuses to go on when the annotations the webhook checked were edited
// after admission (checkAdmitted).
func (s *Sidecar) readDriver(ctx context.Context) error {
	own, err := s.client.Pods(s.cfg.Namespace).Get(ctx, s.cfg.PodName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read own pod %s/%s: %w", s.cfg.Namespace, s.cfg.PodName, err)
	}
	s.driver = patches.ReadDriver(own)
	s.appID = own.Labels[vocab.LabelAppID]
	if s.appID == "" {
		return fmt.Errorf("pod %s has no %s label: it was not injected by the sparklet webhook", own.Name, vocab.LabelAppID)
	}
	s.log = s.log.WithField("app", s.appID)
	s.events = newRecorder(s.client, own, s.log)
	s.apps = &apps{perJVM: s.cfg.AppPerJVM, pod: s.appID, namespace: s.cfg.Namespace, client: s.client, log: s.log,
		events: s.events, timeout: s.cfg.CleanupTimeout, ended: lastTermination(own, s.cfg.SparkContainer)}
	return s.checkAdmitted(own)
}

// serve serves the API on cfg.Listen, plain HTTP and TLS on one port, and
// marks the sidecar ready, until stop is called.
func (s *Sidecar) serve(api *API) (stop func(), err error) {
	cert, err := selfSignedCert(filepath.Join(filepath.Dir(s.cfg.TokenFile), "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	plain, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("SPARKLET_LISTEN %s: %w", s.cfg.Listen, err)
	}
	ln := &eitherListener{Listener: plain, tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.addr = ln.Addr().String()
	close(s.ready)
	s.log.WithFields(logrus.Fields{"listen": s.addr, "executors": len(api.state.executors.all())}).Info("serving the JVM")
	s.events.normal("SidecarReady", fmt.Sprintf("serving the Spark driver on %s for application %s", s.addr, s.appID))
	return func() { _ = srv.Close() }, nil
}

// wait returns when the Spark container has ended or ctx is done, after
// saying how the application ended and deleting what it leaves behind.
func (s *Sidecar) wait(ctx context.Context, ended <-chan struct{}) error {
	why := "the Spark container ended"
	select {
	case <-ended:
	case <-ctx.Done():
		why = "the sidecar was asked to stop"
		select {
		case <-ended:
		case <-time.After(s.endWait):
		}
	}
	s.reportEnd()
	return s.cleanupAndReport(why)
}
