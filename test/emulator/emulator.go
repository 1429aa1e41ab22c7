package emulator

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// Mode is the Spark release whose client behaviour is played.
type Mode string

const (
	// Spark35 is Spark 3.5.4 with fabric8 6.7.2 over OkHttp.
	Spark35 Mode = "3.5"
	// Spark40 is Spark 4.0.0 with fabric8 7.1.0 over Vert.x.
	Spark40 Mode = "4.0"
)

// ParseMode accepts 3.5, 3.5.4, 4.0 and 4.0.0.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "3.5", "3.5.4", "spark35":
		return Spark35, nil
	case "4.0", "4.0.0", "spark40":
		return Spark40, nil
	}
	return "", fmt.Errorf("mode %q: use 3.5 (Spark 3.5.4, fabric8 6.7.2) or 4.0 (Spark 4.0.0, fabric8 7.1.0)", s)
}

func (m Mode) fabric8() string {
	if m == Spark40 {
		return "7.1.0"
	}
	return "6.7.2"
}

func (m Mode) sparkVersion() string {
	if m == Spark40 {
		return "4.0.0"
	}
	return "3.5.4"
}

func (m Mode) userAgent() string { return "fabric8-kubernetes-client/" + m.fabric8() }

// maxConnsPerHost: Spark 3.5 gives OkHttp a Dispatcher with OkHttp's
// defaults, 5 requests per host (K/deploy/k8s/SparkKubernetesClientFactory.scala
// 3.5.4); Vert.x's default pool in fabric8 7.1.0 is not that tight.
func (m Mode) maxConnsPerHost() int {
	if m == Spark35 {
		return 5
	}
	return 0
}

// Config is what the JVM's Spark configuration would say. Zero durations
// and sizes take Spark's defaults for the Mode; start from NewConfig so the
// watch and the polling are on, as they are in Spark.
type Config struct {
	// Server is the master URL without k8s://: http://127.0.0.1:PORT for
	// the sidecar, or an https API server.
	Server string
	// Token is spark.kubernetes.authenticate.oauthToken; empty sends none.
	Token string
	// TLS is used for https servers; nil uses the system roots.
	TLS *tls.Config
	// Namespace is spark.kubernetes.namespace.
	Namespace string
	// AppID is spark.app.id, the spark-app-selector label value.
	AppID string
	// AppName is spark.app.name, the spark-app-name label value.
	AppName string
	// DriverPodName is spark.kubernetes.driver.pod.name.
	DriverPodName string
	// PodNamePrefix is spark.kubernetes.executor.podNamePrefix; pods are
	// named <prefix>-exec-<N>. Default: <app name>-<unique id>, as Spark.
	PodNamePrefix string
	// ExecutorImage is spark.kubernetes.executor.container.image.
	ExecutorImage string
	Mode          Mode
	// BatchSize is spark.kubernetes.allocation.batch.size: 5 in 3.5, 10 in 4.0.
	BatchSize int
	// BatchDelay is spark.kubernetes.allocation.batch.delay, 1s.
	BatchDelay time.Duration
	// PollInterval is spark.kubernetes.executor.apiPollingInterval, 30s.
	PollInterval time.Duration
	// ExecutorTimeout is spark.kubernetes.allocation.executor.timeout,
	// 600s: a created pod not seen in a snapshot by then is deleted.
	ExecutorTimeout time.Duration
	// IdleTimeout is spark.dynamicAllocation.executorIdleTimeout, 60s: only
	// excess pending pods older than this are deleted on downscale.
	IdleTimeout time.Duration
	// DeleteGracePeriod is spark.kubernetes.dynamicAllocation.deleteGracePeriod, 5s.
	DeleteGracePeriod time.Duration
	// ReadinessTimeout is spark.kubernetes.allocation.driver.readinessTimeout, 1s.
	ReadinessTimeout time.Duration
	// EventInterval is spark.kubernetes.executor.eventProcessingInterval,
	// 1s: how often the lifecycle manager looks at snapshots.
	EventInterval time.Duration
	// EnableWatch is spark.kubernetes.executor.enableApiWatcher (true).
	EnableWatch bool
	// EnablePolling is spark.kubernetes.executor.enableApiPolling (true).
	EnablePolling bool
	// Log receives the emulator's entries; nil logs JSON to stderr.
	Log *logrus.Entry
}

// NewConfig returns Spark's defaults for mode, with the watch and the
// polling on.
func NewConfig(mode Mode) Config {
	c := Config{Mode: mode, EnableWatch: true, EnablePolling: true}
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.Mode == "" {
		c.Mode = Spark40
	}
	if c.BatchSize == 0 {
		// KUBERNETES_ALLOCATION_BATCH_SIZE, K/deploy/k8s/Config.scala:
		// 5 in 3.5.4, 10 in 4.0.0.
		c.BatchSize = 5
		if c.Mode == Spark40 {
			c.BatchSize = 10
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.BatchDelay, time.Second)
	def(&c.PollInterval, 30*time.Second)
	def(&c.ExecutorTimeout, 600*time.Second)
	def(&c.IdleTimeout, 60*time.Second)
	def(&c.DeleteGracePeriod, 5*time.Second)
	def(&c.ReadinessTimeout, time.Second)
	def(&c.EventInterval, time.Second)
	if c.AppName == "" {
		c.AppName = "spark-emulator"
	}
	if c.PodNamePrefix == "" {
		// KubernetesConf.getResourceNamePrefix: <app name>-<unique id>.
		c.PodNamePrefix = c.AppName + "-" + uniqueID()
	}
	if c.Log == nil {
		c.Log = JSONLog(os.Stderr)
	}
	c.Log = c.Log.WithField("component", "emulator")
}

// JSONLog is a logger writing JSON entries to w, for Config.Log; the
// default writes to stderr.
func JSONLog(w io.Writer) *logrus.Entry {
	l := logrus.New()
	l.SetFormatter(&logrus.JSONFormatter{})
	l.SetOutput(w)
	return logrus.NewEntry(l)
}

// validate names the field at fault and the fix.
func (c *Config) validate() (*url.URL, error) {
	var errs []error
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("field Server %q: give http://127.0.0.1:PORT (the sidecar) or https://HOST:PORT (an API server)", c.Server))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("field Namespace is empty: set spark.kubernetes.namespace's value"))
	}
	if msgs := validation.IsValidLabelValue(c.AppID); c.AppID == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("field AppID %q must be a non-empty label value: %s", c.AppID, strings.Join(msgs, "; ")))
	}
	if c.DriverPodName == "" {
		errs = append(errs, errors.New("DriverPodName is empty: set the driver pod's name (spark.kubernetes.driver.pod.name)"))
	}
	if c.ExecutorImage == "" {
		// BasicExecutorFeatureStep's own message.
		errs = append(errs, errors.New("ExecutorImage is empty: Must specify the executor container image"))
	}
	if c.Mode != Spark35 && c.Mode != Spark40 {
		errs = append(errs, fmt.Errorf("Mode %q: use %q or %q", c.Mode, Spark35, Spark40))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("BatchSize %d: must be at least 1", c.BatchSize))
	}
	return u, errors.Join(errs...)
}

// FromREST fills Server, Token and TLS of base from a client-go config: a
// bearer token (or token file) or a client certificate. Exec and auth
// provider plugins are not supported.
func FromREST(rc *rest.Config, base Config) (Config, error) {
	if rc.ExecProvider != nil || rc.AuthProvider != nil {
		return base, errors.New("kubeconfig: exec and auth-provider credentials are not supported; use a token or a client certificate")
	}
	host := rc.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	base.Server = strings.TrimSuffix(host, "/")
	base.Token = rc.BearerToken
	if base.Token == "" && rc.BearerTokenFile != "" {
		b, err := os.ReadFile(rc.BearerTokenFile)
		if err != nil {
			return base, fmt.Errorf("kubeconfig token file: %w", err)
		}
		base.Token = strings.TrimSpace(string(b))
	}
	if strings.HasPrefix(base.Server, "https://") {
		tc, err := rest.TLSConfigFor(rc)
		if err != nil {
			return base, fmt.Errorf("kubeconfig TLS: %w", err)
		}
		base.TLS = tc
	}
	return base, nil
}
