package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/submitargs"
)

// Spark Connect servers and drivers whose JVM may restart in place
// (docs/connect.md).
const (
	// connectPlugin embeds the Connect service in any application
	// (spark.plugins).
	connectPlugin = "org.apache.spark.sql.connect.SparkConnectPlugin"
	// envNoDaemonize keeps spark-daemon.sh, which start-connect-server.sh
	// runs, in the foreground: without it the script starts the JVM with
	// nohup in the background and exits (execute_command in
	// sbin/spark-daemon.sh, apache/spark 4.3.0), and so would the container.
	envNoDaemonize = "SPARK_NO_DAEMONIZE"
)

// connectBuiltIn is the first Spark line whose distribution has the Connect
// server in its jars (SPARK-48763); 3.5's has no spark-connect jar.
var connectBuiltIn = sparkLine{4, 0}

// Connect kinds, as the status annotation records them.
const (
	ConnectServer = "server" // the main class is SparkConnectServer
	ConnectPlugin = "plugin" // spark.plugins has SparkConnectPlugin
)

// planConnect tells a Spark Connect server from the command line as
// spark-submit reads it (its main class, directly or through
// start-connect-server.sh) or from spark.plugins, and refuses one on Spark
// 3.5 that has no spark-connect jar. It runs after planFetch, whose jars it
// counts.
func planConnect(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	class, _ := p.cmd.Submit.Last("--class")
	switch {
	case class == submitargs.ConnectServerClass:
		p.connect = ConnectServer
	case containsItem(p.conf["spark.plugins"], connectPlugin):
		p.connect = ConnectPlugin
	default:
		return nil
	}
	if p.cmd.Launcher == submitargs.ConnectLauncher {
		// Kept short: the API server may truncate a warning over 256
		// characters.
		p.warn(fmt.Sprintf("container %q: SIGTERM does not reach the JVM under start-connect-server.sh (bash ignores it as PID 1), "+
			"so the server never stops cleanly; use spark-submit --class %s (docs/connect.md)", c.Name, submitargs.ConnectServerClass))
	}
	if lineOfImage(c.Image).atLeast(connectBuiltIn) || hasConnectJar(p.conf) {
		return nil
	}
	v := imageVersion(c.Image)
	jar := fmt.Sprintf("https://repo1.maven.org/maven2/org/apache/spark/spark-connect_2.12/%[1]s/spark-connect_2.12-%[1]s.jar", v)
	return &Refused{Reason: "connect-jar", Message: fmt.Sprintf(
		"container %q runs a Spark Connect server on Spark %s (image %s), whose distribution has no spark-connect jar: "+
			"list %s with its sha256 in the sparklet.io/fetch annotation (it goes on spark.jars), "+
			"or set spark.jars to a spark-connect_2.12 jar of that version in the image", c.Name, v, c.Image, jar)}
}

// hasConnectJar tells whether spark.jars or spark.jars.packages has the
// Connect server (spark-connect_<scala>, not the client's
// spark-connect-client-jvm).
func hasConnectJar(conf map[string]string) bool {
	for _, k := range []string{"spark.jars", "spark.jars.packages"} {
		for _, item := range strings.Split(conf[k], ",") {
			name := item[strings.LastIndexAny(item, "/:")+1:]
			if strings.HasPrefix(name, "spark-connect_") || strings.Contains(item, ":spark-connect_") {
				return true
			}
		}
	}
	return false
}

// imageVersion is the Spark version an image tag names, such as 3.5.9 of
// apache/spark:3.5.9-scala2.12-java17-ubuntu, or "3.5.x" when it names
// only the line.
func imageVersion(image string) string {
	l := lineOfImage(image)
	tag, _ := imageTag(image)
	tag, _, _ = strings.Cut(strings.TrimPrefix(tag, "v"), "-")
	if parts := strings.Split(tag, "."); len(parts) == 3 && tag == fmt.Sprintf("%d.%d.%s", l.major, l.minor, parts[2]) {
		return tag
	}
	return fmt.Sprintf("%d.%d.x", l.major, l.minor)
}

// planAppPerJVM decides whether every JVM the Spark container runs is an
// application of its own: when the container restarts in place
// (restartPolicy Always, as in a Deployment's or StatefulSet's pods, or
// OnFailure). Spark then picks the application id and the executor name
// prefix of each JVM, and the sidecar cleans up after each one; a fixed
// prefix would name the executors of every JVM alike. The API server
// defaults restartPolicy to Always before the webhook is called. Offline
// (`sparklet inject`), an empty one is taken as Always in a workload's
// template (a Job's must name Never or OnFailure, a Deployment's is
// Always) and as Never in a pod.
func planAppPerJVM(pod *corev1.Pod, p *plan) error {
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure:
	case "":
		if !p.in.Template {
			return nil
		}
	default:
		return nil
	}
	p.appPerJVM = true
	const prefix = "spark.kubernetes.executor.podNamePrefix"
	if v, ok := p.conf[prefix]; ok {
		return &Refused{Reason: "fixed-executor-prefix", Message: fmt.Sprintf(
			"the Spark configuration sets %s=%s, but with restartPolicy %s every JVM the container runs is a new application, "+
				"and a fixed prefix gives the executors of each the same names; remove it (Spark picks a new prefix for each JVM)",
			prefix, v, pod.Spec.RestartPolicy)}
	}
	return nil
}

// runInForeground keeps start-connect-server.sh in the foreground: the
// pod's own SPARK_NO_DAEMONIZE, whatever its value, does the same.
func runInForeground(pod *corev1.Pod, p *plan, done *Status) error {
	if p.cmd.Launcher != submitargs.ConnectLauncher {
		return nil
	}
	c := p.container(pod)
	if _, own := p.userEnv(c, envNoDaemonize); own {
		return nil
	}
	c.Env = upsert(c.Env, corev1.EnvVar{Name: envNoDaemonize, Value: "1"}, envName, true)
	done.Env = append(done.Env, envNoDaemonize)
	return nil
}
