package sparkimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// entrypointScript is the /opt/entrypoint.sh of the images hack/nodeimages
// builds, which must exec what the official script does (the model,
// sparkEntrypoint).
const entrypointScript = "../../hack/nodeimages/spark/entrypoint.sh"

// recorder stands in for tini, gosu and pass-through commands: it writes
// its $0 and arguments, then its environment, NUL-separated.
const recorder = `#!/bin/bash
printf '%s\0' "$0" "$@" >"$RECORD"
env -0 >"$RECORD.env"
`

// TestEntrypointScriptExecsAsTheModel runs the script under bash with tini,
// gosu, id and getent replaced, and compares what it execs with the
// model: under tini -s, as spark through gosu when root, the same argv and
// environment.
func TestEntrypointScriptExecsAsTheModel(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	stubs := filepath.Join(dir, "stubs")
	write := func(p, text string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"tini", "gosu", "record"} {
		write(filepath.Join(stubs, name), recorder, 0o755)
	}
	write(filepath.Join(stubs, "id"), "#!/bin/bash\ncase $1 in -u) echo \"$FAKE_UID\" ;; -g) echo 185 ;; esac\n", 0o755)
	// Every uid has a passwd entry, so the script sets up no nss_wrapper.
	write(filepath.Join(stubs, "getent"), "#!/bin/bash\nexit 0\n", 0o755)

	// The script execs tini by its absolute path; the copy runs the stub.
	text, err := os.ReadFile(entrypointScript)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "exec \"${as_spark[@]}\" /usr/bin/tini -s -- "); n != 2 {
		t.Fatalf("%s: want the driver and the executor exec'd as `exec \"${as_spark[@]}\" /usr/bin/tini -s -- `, found %d", entrypointScript, n)
	}
	script := filepath.Join(dir, "entrypoint.sh")
	write(script, strings.ReplaceAll(string(text), "/usr/bin/tini", filepath.Join(stubs, "tini")), 0o755)
	workDir := filepath.Join(dir, "work-dir")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + stubs + ":/usr/bin:/bin"
	tini := []string{filepath.Join(stubs, "tini"), "-s", "--"}

	for _, tc := range []struct {
		name    string
		args    []string
		env     []string
		root    bool
		wrapped bool // under tini
	}{{
		name: "driver", wrapped: true,
		args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar", "10 20"},
		env:  []string{"SPARK_HOME=/opt/spark", "SPARK_DRIVER_BIND_ADDRESS=10.0.0.5", "JAVA_HOME=/opt/java/openjdk"},
	}, {
		name: "driver as root", wrapped: true, root: true,
		args: []string{"driver", "local:///app.py"},
		env:  []string{"SPARK_HOME=/opt/spark", "SPARK_DRIVER_BIND_ADDRESS=10.0.0.5", "JAVA_HOME=/opt/java/openjdk", "PYSPARK_PYTHON=python3"},
	}, {
		name: "executor", wrapped: true,
		args: []string{"executor"},
		env:  executorEnv,
	}, {
		name: "executor as root, with every classpath variable", wrapped: true, root: true,
		args: []string{"executor"},
		env: append(append([]string{}, executorEnv...),
			"SPARK_EXECUTOR_JAVA_OPTS=", "HADOOP_CONF_DIR=/etc/hadoop", "SPARK_CLASSPATH=/extra/a.jar",
			"SPARK_EXTRA_CLASSPATH=/extra/b/*", "SPARK_DIST_CLASSPATH=/hadoop/*"),
	}, {
		name: "executor without SPARK_CONF_DIR", wrapped: true,
		args: []string{"executor"},
		env:  withoutVar(executorEnv, "SPARK_CONF_DIR"),
	}, {
		name: "pass-through",
		args: []string{"record", "--flag", "a b", ""},
		env:  []string{"SPARK_HOME=/opt/spark", "JAVA_HOME=/opt/java/openjdk"},
	}, {
		name: "pass-through as root runs as root",
		args: []string{"record", "driver"}, root: true,
		env: []string{"SPARK_HOME=/opt/spark", "JAVA_HOME=/opt/java/openjdk"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "record")
			uid := "185"
			if tc.root {
				uid = "0"
			}
			env := append(append([]string{path, "PWD=" + workDir}, tc.env...), "RECORD="+record, "FAKE_UID="+uid)
			cmd := exec.Command("bash", append([]string{script}, tc.args...)...)
			cmd.Dir, cmd.Env = workDir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("entrypoint.sh %q: %v\n%s", tc.args, err, out)
			}
			gotArgv := readNUL(t, record)
			gotEnv := parseEnviron(readNUL(t, record+".env"))

			modelArgv, modelEnv, err := sparkEntrypoint{workDir: workDir}.run(nil, tc.args, env)
			if err != nil {
				t.Fatal(err)
			}
			want := modelArgv
			if tc.wrapped {
				want = append(append([]string{}, tini...), modelArgv...)
				if tc.root {
					want = append([]string{filepath.Join(stubs, "gosu"), "spark"}, want...)
				}
			}
			if !reflect.DeepEqual(gotArgv, want) {
				t.Errorf("exec'd\n  %q\nthe model execs\n  %q", gotArgv, want)
			}
			for name, value := range parseEnviron(modelEnv) {
				if got, ok := gotEnv[name]; !ok || got != value {
					t.Errorf("env %s: exec'd with %q (set: %v), the model with %q", name, got, ok, value)
				}
			}
			if v, ok := gotEnv["LD_PRELOAD"]; ok {
				t.Errorf("LD_PRELOAD=%q, though the uid has a passwd entry", v)
			}
		})
	}
}

func readNUL(t *testing.T, p string) []string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("nothing was exec'd: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
