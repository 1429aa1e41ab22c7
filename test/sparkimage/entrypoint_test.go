package sparkimage

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// executorEnv is what Spark's executor pod builder sets, plus the image's
// SPARK_HOME and JAVA_HOME.
var executorEnv = []string{
	"JAVA_HOME=/jdk",
	"SPARK_HOME=/opt/spark",
	"SPARK_USER=spark",
	"SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@10.0.0.5:7078",
	"SPARK_EXECUTOR_CORES=1",
	"SPARK_EXECUTOR_MEMORY=1024m",
	"SPARK_APPLICATION_ID=spark-app-1",
	"SPARK_CONF_DIR=/opt/spark/conf",
	"SPARK_EXECUTOR_ID=3",
	"SPARK_RESOURCE_PROFILE_ID=0",
	"SPARK_EXECUTOR_POD_IP=10.0.0.7",
	"SPARK_EXECUTOR_POD_NAME=pi-exec-3",
	"SPARK_JAVA_OPT_0=-Dspark.driver.port=7078",
	"SPARK_JAVA_OPT_2=-Dspark.app.id=spark-app-1",
	"SPARK_JAVA_OPT_10=-Dspark.ui.port=0",
	"SPARK_JAVA_OPT_1=",
}

var executorTail = []string{
	"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
	"--driver-url", "spark://CoarseGrainedScheduler@10.0.0.5:7078",
	"--executor-id", "3",
	"--cores", "1",
	"--app-id", "spark-app-1",
	"--hostname", "10.0.0.7",
	"--resourceProfileId", "0",
	"--podName", "pi-exec-3",
}

func TestSparkEntrypoint(t *testing.T) {
	home := t.TempDir() // bound at /opt/spark
	for name, mode := range map[string]os.FileMode{"bin/spark-submit": 0o755, "bin/notes": 0o644} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	ep := sparkEntrypoint{binds: map[string]string{"/opt/spark": home}, workDir: "/opt/spark/work-dir"}
	driverEnv := []string{"SPARK_HOME=/opt/spark", "SPARK_DRIVER_BIND_ADDRESS=10.0.0.5", "PATH=/usr/bin"}

	for _, tc := range []struct {
		name          string
		command, args []string
		env           []string
		argv          []string
		env2          []string // the final env
	}{{
		name: "driver",
		args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar", "10"},
		env:  driverEnv,
		argv: []string{"/opt/spark/bin/spark-submit",
			"--conf", "spark.driver.bindAddress=10.0.0.5",
			"--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.0.0.5",
			"--deploy-mode", "client",
			"--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar", "10"},
		env2: append(driverEnv[:3:3], "PWD=/opt/spark/work-dir"),
	}, {
		name: "driver without a bind address",
		args: []string{"driver", "app.py"},
		env:  []string{"SPARK_HOME=/spark"},
		argv: []string{"/spark/bin/spark-submit",
			"--conf", "spark.driver.bindAddress=",
			"--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=",
			"--deploy-mode", "client", "app.py"},
		env2: []string{"SPARK_HOME=/spark", "PWD=/opt/spark/work-dir"},
	}, {
		name: "executor: options sorted as bash sorts names, empty ones kept",
		args: []string{"executor"},
		env:  executorEnv,
		argv: append([]string{"/jdk/bin/java",
			"-Dspark.driver.port=7078", "", "-Dspark.ui.port=0", "-Dspark.app.id=spark-app-1",
			"-Xms1024m", "-Xmx1024m",
			"-cp", "/opt/spark/conf::/opt/spark/jars/*:/opt/spark/work-dir:"}, executorTail...),
		env2: append(executorEnv[:len(executorEnv):len(executorEnv)], "PWD=/opt/spark/work-dir"),
	}, {
		name: "executor: every classpath input, the container's working directory",
		args: []string{"executor"},
		env: []string{"JAVA_HOME=/jdk", "SPARK_HOME=/opt/spark", "SPARK_EXECUTOR_MEMORY=2g",
			"SPARK_CLASSPATH=/cp", "SPARK_EXTRA_CLASSPATH=/extra", "HADOOP_CONF_DIR=/etc/hadoop",
			"SPARK_DIST_CLASSPATH=/dist/*", "SPARK_EXECUTOR_JAVA_OPTS=-Da=1 -Db=2", "SPARK_JAVA_OPT_0=-Dc=3",
			"PWD=/data", "SPARK_EXECUTOR_ID=1", "SPARK_EXECUTOR_ID=4"},
		argv: []string{"/jdk/bin/java", "-Da=1 -Db=2", "-Dc=3", "-Xms2g", "-Xmx2g",
			"-cp", "/opt/spark/conf:/etc/hadoop:/cp:/opt/spark/jars/*:/extra:/data:/dist/*",
			"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
			"--driver-url", "", "--executor-id", "4", "--cores", "", "--app-id", "",
			"--hostname", "", "--resourceProfileId", "", "--podName", ""},
		env2: []string{"JAVA_HOME=/jdk", "SPARK_HOME=/opt/spark", "SPARK_EXECUTOR_MEMORY=2g",
			"SPARK_CLASSPATH=/cp", "SPARK_EXTRA_CLASSPATH=/extra", "HADOOP_CONF_DIR=/etc/hadoop",
			"SPARK_DIST_CLASSPATH=/dist/*", "SPARK_EXECUTOR_JAVA_OPTS=-Da=1 -Db=2", "SPARK_JAVA_OPT_0=-Dc=3",
			"SPARK_EXECUTOR_ID=1", "SPARK_EXECUTOR_ID=4", "PWD=/data"},
	}, {
		name: "executor: no SPARK_CONF_DIR, no SPARK_HOME",
		args: []string{"executor"},
		env:  []string{"JAVA_HOME=/jdk", "HADOOP_CONF_DIR="},
		argv: append([]string{"/jdk/bin/java", "-Xms", "-Xmx", "-cp", "::/jars/*:/opt/spark/work-dir:"},
			"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
			"--driver-url", "", "--executor-id", "", "--cores", "", "--app-id", "",
			"--hostname", "", "--resourceProfileId", "", "--podName", ""),
		env2: []string{"JAVA_HOME=/jdk", "HADOOP_CONF_DIR=", "PWD=/opt/spark/work-dir"},
	}, {
		name: "pass-through: found on the container's PATH, through the bind",
		args: []string{"spark-submit", "--version"},
		env:  []string{"PATH=relative:/nonexistent:/opt/spark/bin"},
		argv: []string{"/opt/spark/bin/spark-submit", "--version"},
		env2: []string{"PATH=relative:/nonexistent:/opt/spark/bin", "PWD=/opt/spark/work-dir"},
	}, {
		name: "pass-through: an absolute path as is",
		args: []string{"/bin/sh", "-c", "exit 0"},
		env:  []string{"PATH=/usr/bin"},
		argv: []string{"/bin/sh", "-c", "exit 0"},
		env2: []string{"PATH=/usr/bin", "PWD=/opt/spark/work-dir"},
	}, {
		name:    "a command replaces the entrypoint",
		command: []string{"/opt/spark/bin/spark-submit"},
		args:    []string{"driver"},
		env:     []string{"PATH=/usr/bin"},
		argv:    []string{"/opt/spark/bin/spark-submit", "driver"},
		env2:    []string{"PATH=/usr/bin"},
	}, {
		name:    "a command's name is searched on PATH",
		command: []string{"spark-submit", "--version"},
		env:     []string{"PATH=/opt/spark/bin"},
		argv:    []string{"/opt/spark/bin/spark-submit", "--version"},
		env2:    []string{"PATH=/opt/spark/bin"},
	}, {
		name:    "a relative command is taken from the working directory",
		command: []string{"./run.sh"},
		env:     []string{"PWD=/data"},
		argv:    []string{"/data/run.sh"},
		env2:    []string{"PWD=/data"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{}, tc.env...)
			argv, env2, err := ep.run(tc.command, tc.args, env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(argv, tc.argv) {
				t.Errorf("argv\n got %q\nwant %q", argv, tc.argv)
			}
			if !reflect.DeepEqual(env2, tc.env2) {
				t.Errorf("env\n got %q\nwant %q", env2, tc.env2)
			}
			if !reflect.DeepEqual(env, tc.env) {
				t.Errorf("the caller's env changed: %q", env)
			}
		})
	}
}

func TestSparkEntrypointRefuses(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "bin", "notes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ep := sparkEntrypoint{binds: map[string]string{"/opt/spark": home}, workDir: "/opt/spark/work-dir"}
	for _, tc := range []struct {
		name          string
		command, args []string
		env           []string
		err           string
	}{
		{"nothing to run", nil, nil, nil, "nothing to run"},
		{"not on PATH", nil, []string{"nosuchcommand"}, []string{"PATH=/opt/spark/bin"}, `"nosuchcommand": executable file not found`},
		{"not executable", nil, []string{"notes"}, []string{"PATH=/opt/spark/bin"}, `"notes": executable file not found`},
		{"command not on PATH", []string{"nosuchcommand"}, nil, []string{"PATH=/opt/spark/bin"}, "executable file not found"},
		{"hadoop classpath", nil, []string{"executor"}, []string{"JAVA_HOME=/jdk", "HADOOP_HOME=/opt/hadoop"}, "hadoop classpath"},
		{"no JAVA_HOME", nil, []string{"executor"}, []string{"JAVA_HOME="}, "JAVA_HOME is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ep.run(tc.command, tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestHostPath(t *testing.T) {
	binds := map[string]string{"/opt/spark": "/b/spark", "/opt/spark/work-dir": "/w", "/sparklet": "/b/sparklet"}
	for in, want := range map[string]string{
		"/opt/spark":              "/b/spark",
		"/opt/spark/bin/x":        "/b/spark/bin/x",
		"/opt/spark/work-dir/a":   "/w/a",
		"/opt/sparkle":            "/opt/sparkle",
		"/sparklet":               "/b/sparklet",
		"/usr/lib/jvm/x/bin/java": "/usr/lib/jvm/x/bin/java",
	} {
		if got := hostPath(in, binds); got != want {
			t.Errorf("hostPath(%s) = %s, want %s", in, got, want)
		}
	}
}
