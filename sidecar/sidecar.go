package sidecar

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/atomicfile"
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
	// A file left by an earlier run of the sidecar in this pod must not
	// let the conf init container's hook through before this one serves.
	if err := os.Remove(s.servingFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", s.servingFile(), err)
	}
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
	if err := s.readDriver(ctx); err != nil {
		return err
	}
	s.recordHistoryURL(pol)
	token, err := writeToken(s.cfg.TokenFile)
	if err != nil {
		return err
	}
	// The Connect token is written before the JVM may start: spark-env.sh
	// reads it when the Spark container starts.
	stopConnect, err := s.startConnect(pol)
	if err != nil {
		return err
	}
	defer stopConnect()
	// The JVM may start once the sidecar listens: its first request comes
	// when its SparkContext builds the Kubernetes client, and one that
	// comes before the cache is filled waits for it (apiGate).
	gate := &apiGate{ready: make(chan struct{})}
	stopAPI, err := s.listen(gate)
	if err != nil {
		return err
	}
	defer stopAPI()
	s.log.WithField("listen", s.addr).Info("listening: the Spark container may start")
	api, ended, err := s.prepare(ctx, informerCtx.Done(), pol, token)
	if err != nil {
		return err
	}
	s.api = api
	gate.open(api)
	s.markReady(api)
	exposeUI(ctx, s.client, s.driver, pol, s.appID, s.events)
	if s.cfg.ConnectListen != "" {
		exposeConnect(ctx, s.client, s.driver.Pod, pol, s.cfg.ConnectTLSDir == "", s.events)
	}
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

// prepare does what must happen before the JVM's requests are answered:
// it fills the informer cache. The informers run until stopInformers is
// closed; ended is closed when the Spark container ends.
func (s *Sidecar) prepare(ctx context.Context, stopInformers <-chan struct{}, pol *policy.Effective, token []byte) (*API, <-chan struct{}, error) {
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

// listen serves h on cfg.Listen, plain HTTP and TLS on one port, until
// stop is called, and writes the serving file that lets the JVM start.
func (s *Sidecar) listen(h http.Handler) (stop func(), err error) {
	cert, err := selfSignedCert(filepath.Join(filepath.Dir(s.cfg.TokenFile), "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	plain, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("SPARKLET_LISTEN %s: %w", s.cfg.Listen, err)
	}
	ln := &eitherListener{Listener: plain, tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.addr = ln.Addr().String()
	if err := atomicfile.Write(s.servingFile(), []byte(s.addr), 0o444); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("write %s: %w", s.servingFile(), err)
	}
	return func() { _ = srv.Close() }, nil
}

// markReady says that the sidecar answers the JVM's requests: Ready and
// /readyz, its log and an Event.
func (s *Sidecar) markReady(api *API) {
	close(s.ready)
	s.log.WithFields(logrus.Fields{"listen": s.addr, "executors": len(api.state.executors.all())}).Info("serving the JVM")
	s.events.normal("SidecarReady", fmt.Sprintf("serving the Spark driver on %s for application %s", s.addr, s.appID))
}

// apiGate holds the JVM's requests until the API is ready to answer them,
// or until the request's own context ends.
type apiGate struct {
	ready chan struct{}
	api   *API
}

// open lets the requests through to api.
func (g *apiGate) open(api *API) {
	g.api = api
	close(g.ready)
}

func (g *apiGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.ready:
		g.api.ServeHTTP(w, r)
	case <-r.Context().Done():
	}
}

// servingFile is where the sidecar says that it serves the JVM, next to
// the JVM's token: the conf init container waits for it
// (patches.ServingFile).
func (s *Sidecar) servingFile() string {
	return filepath.Join(filepath.Dir(s.cfg.TokenFile), filepath.Base(patches.ServingFile))
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
