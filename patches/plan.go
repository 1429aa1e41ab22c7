package patches

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/patches/submitargs"
	"github.com/sparklet/sparklet/policy"
)

// plan is what the driver steps work from. The checks fill it in, in order,
// from the pod and the policy; the steps only read it.
type plan struct {
	in       Input // its Namespace is set
	pol      *policy.Effective
	spark    int               // index of the Spark container
	conf     map[string]string // the effective Spark configuration
	userConf map[string]string // the pod's sparklet.io/spark-conf
	// podConf are the layers of conf the pod sets: its annotation, its
	// command line and its env's routes (layerConf).
	podConf  []confSource
	confText string // what userConf does not set of conf, rendered for sparklet.io/effective-conf
	// confDigest is the digest of what the JVM reads after the image's
	// conf (DeliveredDigest).
	confDigest string
	fetch      []spec.Entry // the remote dependencies; nil when none
	appID      string
	// cmd is the Spark container's command line as spark-submit reads it.
	cmd submitargs.Command
	// connect is ConnectServer or ConnectPlugin for a Spark Connect
	// server, else empty (planConnect).
	connect string
	// connectAuth is set when the sidecar admits the Connect server's
	// clients (planConnectAuth).
	connectAuth bool
	// connectJVMToken is set when the JVM's Connect port takes only the
	// token the sidecar writes (Spark 4.0+); a 3.5 JVM checks none.
	connectJVMToken bool
	// connectTLS is the Secret the sidecar serves Connect clients over
	// TLS with, or empty (planConnectTLS).
	connectTLS string
	// appPerJVM is set when the container restarts in place, so that each
	// JVM is an application of its own (planAppPerJVM).
	appPerJVM bool
	// sched is the driver's batch scheduler and its settings; nil for none.
	sched *policy.Scheduling
	// imageConf is where the conf init container copies the image's conf
	// directory from, as its SPARKLET_IMAGE_CONF_DIR; nil for the image's
	// own ${SPARK_HOME:-/opt/spark}/conf.
	imageConf *corev1.EnvVar
	// prior is what an earlier injection recorded in the status
	// annotation; empty on a first injection.
	prior priorStatus
	// localDirs are the emptyDirs sparklet adds for Spark's scratch space,
	// and localDirsEnv the SPARK_LOCAL_DIRS it sets; "" keeps the pod's
	// own (planLocalDirs).
	localDirs    []localDir
	localDirsEnv string
	// shipEventLogs is set when the JVM writes its event logs where the
	// sidecar ships them from (planEventLogs).
	shipEventLogs bool
	// warnings are for the user: what sparklet could not check or did not
	// apply, returned with the admission response.
	warnings []string
}

// warn records a warning for the user.
func (p *plan) warn(msg string) { p.warnings = append(p.warnings, msg) }

// container is the pod's Spark container.
func (p *plan) container(pod *corev1.Pod) *corev1.Container { return &pod.Spec.Containers[p.spark] }
