package env

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/emulator"
	"github.com/sparklet/sparklet/test/ready"
)

// Sidecar is `sparklet sidecar` running locally as an injected driver
// pod's sidecar container would: the same args and env, a token from the
// TokenRequest API for the pod's service account, loopback addresses.
type Sidecar struct {
	Pod     *corev1.Pod
	Listen  string // the JVM's API
	Metrics string // /metrics, /readyz
	Dir     string // token, certificate, kubeconfig, log
	// ExtraArgs are added to the container's args, such as --profiling.
	ExtraArgs []string
	env       *Env
	cmd       *exec.Cmd
	exited    chan error
}

// NewSidecar prepares a sidecar for an injected pod; Start runs it.
func (e *Env) NewSidecar(pod *corev1.Pod, dir string) (*Sidecar, error) {
	listen, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	metrics, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	return &Sidecar{Pod: pod, env: e, Dir: dir,
		Listen: fmt.Sprintf("127.0.0.1:%d", listen), Metrics: fmt.Sprintf("127.0.0.1:%d", metrics)}, nil
}

// TokenFile is where the sidecar writes the JVM's token.
func (s *Sidecar) TokenFile() string { return filepath.Join(s.Dir, "token") }

// LogFile is the sidecar's log.
func (s *Sidecar) LogFile() string { return filepath.Join(s.Dir, "sidecar.log") }

// Exited delivers the process's exit.
func (s *Sidecar) Exited() <-chan error { return s.exited }

// Start runs the sidecar and waits until it is ready. A restart keeps the
// addresses and the directory, as the kubelet keeps the pod's.
func (s *Sidecar) Start(ctx context.Context) error {
	e := s.env
	exp := int64(3600)
	tok, err := e.Client.CoreV1().ServiceAccounts(s.Pod.Namespace).CreateToken(ctx, s.Pod.Spec.ServiceAccountName, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: s.Pod.Name, UID: s.Pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token request for %s: %w", s.Pod.Spec.ServiceAccountName, err)
	}
	ca, _ := e.Cluster.CA()
	kubeconfig := filepath.Join(s.Dir, "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]\n"+
		"users: [{name: u, user: {token: %q}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
		e.Cluster.RESTConfig().Host, base64.StdEncoding.EncodeToString(ca), tok.Status.Token)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		return err
	}
	var sc *corev1.Container
	for i := range s.Pod.Spec.InitContainers {
		if s.Pod.Spec.InitContainers[i].Name == patches.SidecarName {
			sc = &s.Pod.Spec.InitContainers[i]
		}
	}
	if sc == nil {
		return fmt.Errorf("pod %s has no %s container", s.Pod.Name, patches.SidecarName)
	}
	cmd := exec.Command(filepath.Join(e.opts.BinDir, "sparklet"), append(append(append([]string{}, sc.Args...), s.ExtraArgs...), "--kubeconfig", kubeconfig)...)
	// The container's env, with the pod's name and namespace resolved and
	// this process's addresses and directory in place of the pod's.
	env := patches.ParseSidecarEnv(func(name string) (string, bool) { return envValue(sc.Env, name) })
	env.PodName, env.Namespace = s.Pod.Name, s.Pod.Namespace
	env.Listen, env.MetricsListen, env.TokenFile = s.Listen, s.Metrics, s.TokenFile()
	local := env.EnvVars()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, v := range sc.Env {
		if val, ok := envValue(local, v.Name); ok {
			v.Value = val
		}
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	log, err := os.OpenFile(s.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	s.cmd, s.exited = cmd, make(chan error, 1)
	go func() { s.exited <- cmd.Wait(); log.Close() }()
	return ready.Wait(ctx, "http://"+s.Metrics+"/readyz", 50*time.Millisecond, 30*time.Second, func() error {
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("sidecar exited (%v):\n%s", err, cluster.Tail(s.LogFile(), 20))
		default:
			return nil
		}
	})
}

// envValue is the value of the env var name in env.
func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, v := range env {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// Signal sends sig to the sidecar process.
func (s *Sidecar) Signal(sig syscall.Signal) {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Token is the JVM's token, as the JVM would read it.
func (s *Sidecar) Token() (string, error) {
	b, err := os.ReadFile(s.TokenFile())
	return string(b), err
}

// PID is the running sidecar's process id.
func (s *Sidecar) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// EmulatorConfig is the JVM's configuration as the pod's injected conf
// says, pointed at this sidecar with the token the JVM reads: namespace,
// application id, executor image, allocation batch size and API polling.
// The driver pod name is the pod's own, which the conf takes from ${env:SPARKLET_POD_NAME}.
// The rest are Spark's defaults for mode; Start the sidecar first.
func (s *Sidecar) EmulatorConfig(mode emulator.Mode) (emulator.Config, error) {
	cfg := emulator.NewConfig(mode)
	token, err := s.Token()
	if err != nil {
		return cfg, fmt.Errorf("the JVM's token: %w", err)
	}
	conf, err := patches.EffectiveConf(s.Pod.Annotations)
	if err != nil {
		return cfg, fmt.Errorf("effective conf of %s: %w", s.Pod.Name, err)
	}
	cfg.Server, cfg.Token, cfg.DriverPodName = "http://"+s.Listen, token, s.Pod.Name
	cfg.Namespace, cfg.AppID = conf["spark.kubernetes.namespace"], conf["spark.app.id"]
	// spark.kubernetes.executor.container.image falls back to
	// spark.kubernetes.container.image (EXECUTOR_CONTAINER_IMAGE in
	// Spark's deploy/k8s/Config.scala, 3.5.4 and 4.0.0).
	cfg.ExecutorImage = conf["spark.kubernetes.executor.container.image"]
	if cfg.ExecutorImage == "" {
		cfg.ExecutorImage = conf["spark.kubernetes.container.image"]
	}
	if v, ok := conf["spark.kubernetes.executor.enableApiPolling"]; ok {
		if cfg.EnablePolling, err = strconv.ParseBool(v); err != nil {
			return cfg, fmt.Errorf("spark.kubernetes.executor.enableApiPolling %q: %w", v, err)
		}
	}
	if v, ok := conf["spark.kubernetes.allocation.batch.size"]; ok {
		if cfg.BatchSize, err = strconv.Atoi(v); err != nil {
			return cfg, fmt.Errorf("spark.kubernetes.allocation.batch.size %q: %w", v, err)
		}
	}
	return cfg, nil
}

// StartSidecar runs a sidecar for an injected pod until the test ends,
// when it is stopped; a failed test logs the end of its log.
func (e *Env) StartSidecar(ctx context.Context, t testing.TB, pod *corev1.Pod) *Sidecar {
	t.Helper()
	sc, err := e.NewSidecar(pod, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Registered after TempDir's, so it runs before the log is removed.
	t.Cleanup(func() {
		sc.Signal(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("sidecar log of %s:\n%s", pod.Name, cluster.Tail(sc.LogFile(), 30))
		}
	})
	if err := sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return sc
}
