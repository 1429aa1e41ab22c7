package submitargs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSubmit(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		opts     []Option
		resource string
		appArgs  []string
		err      string
	}{
		{"options then jar then app args", []string{"--class", "Main", "-c", "spark.a=1", "--verbose", "app.jar", "--conf", "x", "-v"},
			[]Option{{"--class", "Main"}, {"--conf", "spark.a=1"}, {"--verbose", ""}}, "app.jar", []string{"--conf", "x", "-v"}, ""},
		{"inline values", []string{"--num-executors=3", "--conf=spark.a=b=c", "--verbose=yes", "app.py"},
			[]Option{{"--num-executors", "3"}, {"--conf", "spark.a=b=c"}, {"--verbose", ""}}, "app.py", nil, ""},
		{"an empty inline value is not the inline form", []string{"--conf=", "app.py"}, nil, "", nil, "--conf= is not a spark-submit option"},
		{"a value may start with a dash", []string{"--driver-java-options", "-Dx=1", "app.jar"},
			[]Option{{"--driver-java-options", "-Dx=1"}}, "app.jar", nil, ""},
		{"missing value", []string{"--master"}, nil, "", nil, "--master has no value"},
		{"unknown option", []string{"--exectuor-memory", "4g", "app.jar"}, nil, "", nil, "--exectuor-memory is not a spark-submit option"},
		{"options are case-sensitive", []string{"--CONF", "a=b"}, nil, "", nil, "--CONF is not a spark-submit option"},
		{"4.x switch and option", []string{"--load-spark-defaults", "--driver-default-class-path", "/x", "app.jar"},
			[]Option{{"--load-spark-defaults", ""}, {"--driver-default-class-path", "/x"}}, "app.jar", nil, ""},
		{"pyspark mixes", []string{"pyspark-shell-main", "--name", "PySparkShell", "-i", "--conf", "spark.a=1", "notebook"},
			[]Option{{"--name", "PySparkShell"}, {"--conf", "spark.a=1"}}, "pyspark-shell-main", []string{"-i", "notebook"}, ""},
		{"spark-shell class mixes", []string{"--class", "org.apache.spark.repl.Main", "-I", "init.scala", "--executor-cores", "2"},
			[]Option{{"--class", "org.apache.spark.repl.Main"}, {"--executor-cores", "2"}}, "", []string{"-I", "init.scala"}, ""},
		{"no resource", []string{"--version"}, []Option{{"--version", ""}}, "", nil, ""},
		{"the Connect server class mixes", []string{"--class", ConnectServerClass, "--wait", "--conf", "spark.a=1"},
			[]Option{{"--class", ConnectServerClass}, {"--conf", "spark.a=1"}}, "", []string{"--wait"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSubmit(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Options, tc.opts) || s.Resource != tc.resource || !reflect.DeepEqual(s.AppArgs, tc.appArgs) {
				t.Errorf("got %+v, want options %v resource %q app args %q", s, tc.opts, tc.resource, tc.appArgs)
			}
		})
	}
}

func TestConf(t *testing.T) {
	s, err := ParseSubmit([]string{"--num-executors", "5", "--conf", "spark.executor.instances=2", "--conf", "spark.a=1",
		"--conf", "spark.a=2", "--supervise", "--executor-memory", "4g", "--name", "etl", "--class", "Main", "app.jar"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Conf()
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{
		{"spark.executor.instances", "2", "--conf"}, {"spark.a", "1", "--conf"}, {"spark.a", "2", "--conf"},
		{"spark.executor.instances", "5", "--num-executors"}, {"spark.driver.supervise", "true", "--supervise"},
		{"spark.executor.memory", "4g", "--executor-memory"}, {"spark.app.name", "etl", "--name"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Conf() = %v\nwant %v", got, want)
	}
	for _, bad := range []string{"novalue", "=v"} {
		if _, err := (Submit{Options: []Option{{"--conf", bad}}}).Conf(); err == nil || !strings.Contains(err.Error(), "expected key=value") {
			t.Errorf("--conf %q: err = %v", bad, err)
		}
	}
}

func TestRead(t *testing.T) {
	cases := []struct {
		name      string
		command   []string
		args      []string
		launcher  string
		opts      int // how many options were read
		unchecked string
	}{
		{"entrypoint driver", nil, []string{"driver", "--conf", "spark.a=1", "app.jar"}, "driver", 1, ""},
		{"explicit entrypoint", []string{"/opt/entrypoint.sh"}, []string{"driver", "app.jar"}, "driver", 0, ""},
		{"entrypoint passes through", nil, []string{"/opt/spark/bin/spark-submit", "--conf", "spark.a=1", "x.py"}, "spark-submit", 1, ""},
		{"no command line", nil, nil, "", 0, ""},
		{"spark-submit", []string{"/opt/spark/bin/spark-submit"}, []string{"--verbose", "x.py"}, "spark-submit", 1, ""},
		{"pyspark adds its name", []string{"pyspark"}, nil, "pyspark", 1, ""},
		{"spark-shell", []string{"spark-shell", "--conf", "spark.a=1"}, nil, "spark-shell", 3, ""},
		{"python", []string{"python3.11", "app.py", "--conf", "x"}, nil, "python", 0, ""},
		{"tini", []string{"/usr/bin/tini", "-s", "--", "/opt/entrypoint.sh", "driver", "--conf", "spark.a=1", "app.jar"}, nil, "driver", 1, ""},
		{"env", []string{"env", "A=1", "spark-submit", "--conf", "spark.a=1", "x.py"}, nil, "spark-submit", 1, ""},
		{"argo emissary", []string{"/var/run/argo/argoexec", "emissary", "--", "/opt/spark/bin/spark-submit", "--conf", "spark.a=1", "x.jar"}, nil, "spark-submit", 1, ""},
		{"sh -c", []string{"/bin/sh", "-c", "A=1 exec spark-submit --conf 'spark.a=1 2' x.py"}, nil, "spark-submit", 1, ""},
		{"bash -lc with $0 args", []string{"bash", "-lc", "spark-submit x.py", "name", "arg"}, nil, "spark-submit", 0, ""},
		{"bash -e -o pipefail -c", []string{"bash", "-e", "-o", "pipefail", "-c", "spark-submit x.py"}, nil, "spark-submit", 0, ""},
		{"script file", []string{"bash", "/run.sh"}, nil, "", 0, "bash runs a script file"},
		{"compound script", []string{"sh", "-c", "set -e; spark-submit x.py"}, nil, "", 0, "not one simple command (it uses ;)"},
		{"unknown program", []string{"java", "-cp", "x", "Main"}, nil, "", 0, "java is not spark-submit"},
		{"start-connect-server.sh", []string{"/opt/spark/sbin/start-connect-server.sh", "--conf", "spark.a=1"}, nil, ConnectLauncher, 3, ""},
		{"start-connect-server.sh --wait", nil, []string{"/opt/spark/sbin/start-connect-server.sh", "--wait", "--packages", "x:y:1"}, ConnectLauncher, 3, ""},
		{"nested shells", []string{"sh", "-c", `sh -c "sh -c 'spark-submit --conf spark.a=1 x.py'"`}, nil, "spark-submit", 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Read(tc.command, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if c.Launcher != tc.launcher || len(c.Submit.Options) != tc.opts || !strings.Contains(c.Unchecked, tc.unchecked) || (tc.unchecked == "") != (c.Unchecked == "") {
				t.Errorf("Read = %+v, want launcher %q, %d options, unchecked %q", c, tc.launcher, tc.opts, tc.unchecked)
			}
		})
	}
	c, err := Read([]string{"bash", "-c", "exec /opt/spark/sbin/start-connect-server.sh --wait --conf spark.a=1"}, nil)
	if class, _ := c.Submit.Last("--class"); err != nil || class != ConnectServerClass || len(c.Submit.AppArgs) != 0 {
		t.Errorf("start-connect-server.sh reads as %+v, %v; want --class %s, --wait dropped", c, err, ConnectServerClass)
	}
	if _, err := Read([]string{"spark-submit", "--bogus"}, nil); err == nil {
		t.Error("an unknown option before the resource must be an error")
	}
}

func TestSplitShell(t *testing.T) {
	cases := []struct {
		script string
		words  []string
		why    string
	}{
		{`a b  c`, []string{"a", "b", "c"}, ""},
		{`a 'b c' "d e" f\ g`, []string{"a", "b c", "d e", "f g"}, ""},
		{`a "x\"y\\z\q" ''`, []string{"a", `x"y\z\q`, ""}, ""},
		{"a \\\n b\n\n", []string{"a", "b"}, ""},
		{"a # comment ; here\n", []string{"a"}, ""},
		{"a b#c", []string{"a", "b#c"}, ""},
		{"\n# only a comment\n  a b # trailing\n", []string{"a", "b"}, ""},
		{"a\nb", nil, "more than one command"},
		{`a $HOME`, nil, "expands $"},
		{`a "$HOME"`, nil, "expands $ inside double quotes"},
		{"a `b`", nil, "expands `"},
		{`a | b`, nil, "uses |"},
		{`a > f`, nil, "uses >"},
		{`a *.jar`, nil, "pattern"},
		{`a ~/x`, nil, "expands ~"},
		{`a 'b`, nil, "single quote is not closed"},
		{`a "b`, nil, "double quote is not closed"},
		{`a \`, nil, "ends with a backslash"},
		{`if true`, nil, "starts with if"},
	}
	for _, tc := range cases {
		words, why := SplitShell(tc.script)
		if !reflect.DeepEqual(words, tc.words) || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("SplitShell(%q) = %q, %q; want %q, %q", tc.script, words, why, tc.words, tc.why)
		}
	}
}
