package sparkimage

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// sparkEntrypoint plays /opt/entrypoint.sh of the official images, from
// apache/spark-docker (3.5.8/scala2.12-java17-ubuntu/entrypoint.sh and
// 4.0.0/scala2.13-java17-ubuntu/entrypoint.sh; the script is the same for
// every 3.5.x and 4.x image up to 4.2.0-preview5). What it leaves out:
// tini and gosu (the runner starts and reaps the process and picks its
// user) and the nss_wrapper passwd entry for a uid without one.
type sparkEntrypoint struct {
	binds   map[string]string
	workDir string // the image's WORKDIR
}

// run turns a container's command, args and env into argv and env. A
// command replaces the entrypoint, as in Kubernetes. The working directory,
// which the script reads as $PWD, is env's PWD if set (the runner passes it
// for a container with its own workingDir), else the image's WORKDIR.
func (s sparkEntrypoint) run(command, args, env []string) ([]string, []string, error) {
	e := parseEnviron(env)
	pwd := s.workDir
	if e.isSet("PWD") {
		pwd = e["PWD"]
	}
	if len(command) > 0 {
		return s.exec(append(append([]string{}, command...), args...), env, e, pwd)
	}
	if len(args) == 0 {
		return nil, nil, errors.New("spark image: no command and no args, so the entrypoint has nothing to run")
	}
	if v := e["HADOOP_HOME"]; v != "" && e["SPARK_DIST_CLASSPATH"] == "" {
		return nil, nil, fmt.Errorf("spark image: HADOOP_HOME=%s and no SPARK_DIST_CLASSPATH: the entrypoint would run $HADOOP_HOME/bin/hadoop classpath, which is not played here", v)
	}
	// bash exports the working directory as PWD.
	env = withVar(env, "PWD", pwd)

	switch args[0] {
	case "driver":
		argv := append([]string{
			e["SPARK_HOME"] + "/bin/spark-submit",
			"--conf", "spark.driver.bindAddress=" + e["SPARK_DRIVER_BIND_ADDRESS"],
			"--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=" + e["SPARK_DRIVER_BIND_ADDRESS"],
			"--deploy-mode", "client",
		}, args[1:]...)
		return argv, env, nil
	case "executor":
		if e["JAVA_HOME"] == "" {
			return nil, nil, errors.New("spark image: JAVA_HOME is empty (the image sets it; the script would ask `java` on PATH, which is not played here)")
		}
		argv := []string{e["JAVA_HOME"] + "/bin/java"}
		argv = append(argv, executorJavaOpts(e)...)
		argv = append(argv,
			"-Xms"+e["SPARK_EXECUTOR_MEMORY"],
			"-Xmx"+e["SPARK_EXECUTOR_MEMORY"],
			"-cp", executorClasspath(e, pwd)+":"+e["SPARK_DIST_CLASSPATH"],
			"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
			"--driver-url", e["SPARK_DRIVER_URL"],
			"--executor-id", e["SPARK_EXECUTOR_ID"],
			"--cores", e["SPARK_EXECUTOR_CORES"],
			"--app-id", e["SPARK_APPLICATION_ID"],
			"--hostname", e["SPARK_EXECUTOR_POD_IP"],
			"--resourceProfileId", e["SPARK_RESOURCE_PROFILE_ID"],
			"--podName", e["SPARK_EXECUTOR_POD_NAME"],
		)
		return argv, env, nil
	default:
		// Pass-through: exec "$@".
		return s.exec(args, env, e, pwd)
	}
}

func (s sparkEntrypoint) exec(argv, env []string, e environ, pwd string) ([]string, []string, error) {
	p, err := lookPath(argv[0], e["PATH"], pwd, s.binds)
	if err != nil {
		return nil, nil, fmt.Errorf("spark image: %w", err)
	}
	argv[0] = p
	return argv, env, nil
}

// executorJavaOpts is the script's SPARK_EXECUTOR_JAVA_OPTS: its value from
// the env, if any, then the values of every SPARK_JAVA_OPT_* variable in
// the order of bash's ${!SPARK_JAVA_OPT_@}, which sorts names bytewise
// (SPARK_JAVA_OPT_10 before SPARK_JAVA_OPT_2). Empty values stay, as
// "${!v}" keeps them.
func executorJavaOpts(e environ) []string {
	var opts []string
	if e.isSet("SPARK_EXECUTOR_JAVA_OPTS") {
		opts = append(opts, e["SPARK_EXECUTOR_JAVA_OPTS"])
	}
	var names []string
	for name := range e {
		if strings.HasPrefix(name, "SPARK_JAVA_OPT_") && isShellName(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		opts = append(opts, e[name])
	}
	return opts
}

// executorClasspath composes SPARK_CLASSPATH as the script does, step by
// step, empty entries included.
func executorClasspath(e environ, pwd string) string {
	cp := e["SPARK_CLASSPATH"] + ":" + e["SPARK_HOME"] + "/jars/*"
	if v := e["SPARK_EXTRA_CLASSPATH"]; v != "" {
		cp += ":" + v
	}
	if e.isSet("HADOOP_CONF_DIR") {
		cp = e["HADOOP_CONF_DIR"] + ":" + cp
	}
	if e.isSet("SPARK_CONF_DIR") {
		cp = e["SPARK_CONF_DIR"] + ":" + cp
	} else if e.isSet("SPARK_HOME") {
		cp = e["SPARK_HOME"] + "/conf:" + cp
	}
	// SPARK-43540: the working directory is on the executor's classpath.
	return cp + ":" + pwd
}

// isShellName reports whether bash imports name from the environment as a
// variable.
func isShellName(name string) bool {
	for i, c := range name {
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}
