package submitargs

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Command is what a container's command line tells about the Spark it runs.
type Command struct {
	// Launcher is the program that reads spark-submit's options:
	// "driver" (the image's entrypoint), "spark-submit", "pyspark",
	// "spark-shell", "spark-sql", "sparkR", "run-example" or
	// "start-connect-server.sh"; "python" for a
	// Python program, which has no options to read; empty when there is
	// nothing to read.
	Launcher string
	// Submit holds the options, when the launcher reads them.
	Submit Submit
	// Unchecked, when not empty, says why the command line could not be
	// read (a shell script that is not a simple command, a program sparklet
	// does not know). Its Spark options, if any, were not checked.
	Unchecked string
	// Interactive is set when the command line runs an interactive shell
	// (an option with i, such as -i or -ic), which reads $ENV first.
	Interactive bool
}

// The launchers of the Spark distribution's bin/ and the arguments each
// passes to spark-submit before the user's (bin/pyspark, bin/spark-shell,
// bin/spark-sql, bin/sparkR and bin/run-example of Spark 3.5.x and 4.x).
// The image's "driver" entrypoint passes --deploy-mode client and two
// --conf that sparklet sets too; they are left out, as client is also the
// default.
var launchers = map[string][]string{
	"spark-submit": nil,
	"pyspark":      {"pyspark-shell-main", "--name", "PySparkShell"},
	"spark-shell":  {"--class", "org.apache.spark.repl.Main", "--name", "Spark shell"},
	"spark-sql":    {"--class", "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver"},
	"sparkR":       {"sparkr-shell-main", "--name", "SparkR"},
	"run-example":  {"run-example"},
}

// ConnectLauncher is sbin/start-connect-server.sh, which starts the Spark
// Connect server through spark-daemon.sh.
const ConnectLauncher = "start-connect-server.sh"

// connectServerArgs are spark-submit's arguments when start-connect-server.sh
// runs with args: a first --wait only sets SPARK_NO_DAEMONIZE, and
// spark-daemon.sh runs `spark-submit --class <ConnectServerClass> --name
// "Spark Connect server" "$@"` (apache/spark sbin/start-connect-server.sh and
// sbin/spark-daemon.sh, 4.3.0; the same since 3.4, without --wait in 3.5).
func connectServerArgs(args []string) []string {
	if len(args) > 0 && args[0] == "--wait" {
		args = args[1:]
	}
	return append([]string{"--class", ConnectServerClass, "--name", "Spark Connect server"}, args...)
}

var pythonName = regexp.MustCompile(`^python[0-9.]*$`)

// maxDepth bounds how many wrappers (entrypoint, env, shells) are unwrapped.
const maxDepth = 8

// Read reads a container's command and args. With no command, the image's
// entrypoint runs the args: the apache/spark images' /opt/entrypoint.sh
// (apache/spark-docker, entrypoint.sh for 3.5 and 4.x) runs spark-submit
// --deploy-mode client with the words after "driver", and any other words
// as a command. An error is a command line spark-submit itself would
// refuse.
func Read(command, args []string) (Command, error) {
	words := append(append([]string{}, command...), args...)
	if len(command) == 0 {
		words = append([]string{"/opt/entrypoint.sh"}, args...)
	}
	return read(words, 0)
}

func read(words []string, depth int) (Command, error) {
	if len(words) == 0 {
		return Command{}, nil
	}
	if depth > maxDepth {
		return Command{Unchecked: "it nests more than 8 launchers"}, nil
	}
	prog := path.Base(words[0])
	switch {
	case prog == "entrypoint.sh":
		if len(words) > 1 && words[1] == "driver" {
			return submit("driver", words[2:])
		}
		if len(words) == 1 {
			return Command{}, nil
		}
		return read(words[1:], depth+1)
	case launchers[prog] != nil || prog == "spark-submit":
		return submit(prog, append(append([]string{}, launchers[prog]...), words[1:]...))
	case prog == ConnectLauncher:
		return submit(prog, connectServerArgs(words[1:]))
	case pythonName.MatchString(prog):
		return Command{Launcher: "python"}, nil
	case prog == "env":
		return read(skipAssignments(words[1:]), depth+1)
	case prog == "tini":
		rest := words[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:]
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
				break
			}
		}
		return read(rest, depth+1)
	case prog == "argoexec" && len(words) > 1 && words[1] == "emissary":
		// Argo Workflows' emissary executor runs a step's main container
		// as `/var/run/argo/argoexec emissary -- <command> <args>`.
		rest := words[2:]
		for len(rest) > 0 && rest[0] != "--" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return Command{}, nil
		}
		return read(rest[1:], depth+1)
	case shells[prog]:
		interactive := interactiveShell(words[1:])
		script, ok := shellScript(words[1:])
		if !ok {
			return Command{Unchecked: fmt.Sprintf("%s runs a script file", prog), Interactive: interactive}, nil
		}
		inner, why := SplitShell(script)
		if why != "" {
			return Command{Unchecked: fmt.Sprintf("the %s script is not one simple command (%s)", prog, why), Interactive: interactive}, nil
		}
		inner = skipAssignments(inner)
		if len(inner) > 0 && inner[0] == "exec" {
			inner = skipAssignments(inner[1:])
		}
		if len(inner) == 0 {
			return Command{Interactive: interactive}, nil
		}
		c, err := read(inner, depth+1)
		c.Interactive = c.Interactive || interactive
		return c, err
	}
	return Command{Unchecked: fmt.Sprintf("%s is not spark-submit, pyspark, spark-shell, spark-sql, python, the image's driver "+
		"entrypoint or sh -c running one", prog)}, nil
}

func submit(launcher string, args []string) (Command, error) {
	s, err := ParseSubmit(args)
	if err != nil {
		return Command{}, err
	}
	return Command{Launcher: launcher, Submit: s}, nil
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// skipAssignments drops the NAME=value words before a command, as the shell
// and env do.
func skipAssignments(words []string) []string {
	for len(words) > 0 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	return words
}
