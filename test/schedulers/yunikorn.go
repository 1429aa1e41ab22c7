package schedulers

import (
	"context"
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

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/ready"
)

// YuniKornName is the schedulerName YuniKorn schedules.
const YuniKornName = "yunikorn"

// YuniKornQueue is the queue the configuration has for sparklet's
// applications.
const YuniKornQueue = "root.sparklet"

// YuniKornNamespace is where the scheduler reads its yunikorn-configs
// ConfigMap.
const YuniKornNamespace = "yunikorn"

// yunikornQueues is the configuration's queues.yaml: the queue an
// application names (label yunikorn.apache.org/queue) if it exists, else one
// per namespace. root.sparklet sorts its applications FIFO, as gang
// scheduling needs (yunikorn-site docs/user_guide/gang_scheduling.md).
const yunikornQueues = `partitions:
- name: default
  placementrules:
  - name: provided
  - name: tag
    value: namespace
    create: true
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: sparklet
      submitacl: '*'
      properties:
        application.sort.policy: fifo
`

// YuniKorn is the scheduler running as a local process.
type YuniKorn struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
	addr string
}

// StartYuniKorn writes the yunikorn-configs ConfigMap, starts
// BinDir/yunikorn-scheduler against c with its log in c.Dir()/logs and
// returns once the scheduler has synced the cluster and registered with
// YuniKorn's core. Stop ends it.
func StartYuniKorn(ctx context.Context, c *cluster.Cluster, binDir string) (*YuniKorn, error) {
	bin := filepath.Join(binDir, "yunikorn-scheduler")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("yunikorn-scheduler not found in %s: build it with hack/yunikorn/build.sh (make yunikorn-binary)", binDir)
	}
	if err := writeYuniKornConfig(ctx, c); err != nil {
		return nil, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	y := &YuniKorn{log: filepath.Join(c.Dir(), "logs", "yunikorn-scheduler.log"), addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	log, err := os.OpenFile(y.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	y.cmd = exec.Command(bin, "--listen", y.addr)
	y.cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig(), "NAMESPACE="+YuniKornNamespace)
	y.cmd.Stdout, y.cmd.Stderr = log, log
	y.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := y.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start yunikorn-scheduler: %w", err)
	}
	go func() { _ = y.cmd.Wait(); log.Close(); close(y.done) }()
	err = ready.Wait(ctx, "http://"+y.addr+"/readyz", 100*time.Millisecond, 2*time.Minute, func() error {
		select {
		case <-y.done:
			return fmt.Errorf("yunikorn-scheduler exited:\n%s", y.LogTail(30))
		default:
			return nil
		}
	})
	if err != nil {
		y.Stop()
		return nil, fmt.Errorf("yunikorn-scheduler not ready (log %s): %w", y.log, err)
	}
	return y, nil
}

// writeYuniKornConfig creates, or replaces, the scheduler's configuration.
func writeYuniKornConfig(ctx context.Context, c *cluster.Cluster) error {
	cs := c.Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: YuniKornNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", YuniKornNamespace, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "yunikorn-configs", Namespace: YuniKornNamespace},
		Data:       map[string]string{"queues.yaml": yunikornQueues},
	}
	_, err := cs.CoreV1().ConfigMaps(YuniKornNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(YuniKornNamespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write the yunikorn-configs ConfigMap: %w", err)
	}
	return nil
}

// LogFile is the scheduler's log.
func (y *YuniKorn) LogFile() string { return y.log }

// LogTail returns the last n lines of the scheduler's log.
func (y *YuniKorn) LogTail(n int) string { return cluster.Tail(y.log, n) }

// Exited is closed once the scheduler process has exited.
func (y *YuniKorn) Exited() <-chan struct{} { return y.done }

// Stop ends the scheduler and waits for it to exit.
func (y *YuniKorn) Stop() {
	if y.cmd != nil && y.cmd.Process != nil {
		cluster.Terminate(y.cmd.Process.Pid, y.done)
	}
}
