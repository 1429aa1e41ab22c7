package submitargs

import (
	"errors"
	"strings"
	"unicode"
)

// Spark properties reach the driver JVM through its environment too, where
// the command line does not show them. The readers here take those routes
// apart as Spark, the JVM and the kubelet do.

// SubmitEnv maps the environment variables spark-submit falls back to when
// no option or property sets the key (SparkSubmitArguments.loadEnvironmentArguments,
// core/src/main/scala/org/apache/spark/deploy/, 3.5.9, 4.0.1, 4.1.0, 4.2.0).
// SPARK_YARN_APP_NAME counts only on YARN and is left out.
var SubmitEnv = map[string]string{
	"MASTER":                "spark.master",
	"SPARK_REMOTE":          "spark.remote",
	"DEPLOY_MODE":           "spark.submit.deployMode",
	"SPARK_DRIVER_MEMORY":   "spark.driver.memory",
	"SPARK_EXECUTOR_MEMORY": "spark.executor.memory",
	"SPARK_EXECUTOR_CORES":  "spark.executor.cores",
}

// JVMOptionEnv are the variables whose JVM options reach the driver JVM,
// in the order their -D system properties apply (a later one wins):
// JAVA_TOOL_OPTIONS before the command line and _JAVA_OPTIONS after it
// (JDK 17 Arguments::parse_java_tool_options_environment_variable and
// parse_java_options_environment_variable), and between them on the
// command line the launcher's SPARK_SUBMIT_OPTS, and SPARK_DAEMON_JAVA_OPTS
// for the Thrift and Connect servers (SparkSubmitCommandBuilder.buildSparkSubmitCommand).
var JVMOptionEnv = []string{"JAVA_TOOL_OPTIONS", "SPARK_DAEMON_JAVA_OPTS", "SPARK_SUBMIT_OPTS", "_JAVA_OPTIONS"}

// SplitJVMOptions splits JAVA_TOOL_OPTIONS or _JAVA_OPTIONS as the JVM
// does (JDK 17 Arguments::parse_options_buffer): white space separates
// options, and '...' or "..." quotes run to the same quote with no
// escapes. An unmatched quote is an error, as the JVM refuses to start.
func SplitJVMOptions(s string) ([]string, error) {
	var opts []string
	for i := 0; i < len(s); {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		var b strings.Builder
		for i < len(s) && !isSpace(s[i]) {
			if q := s[i]; q == '\'' || q == '"' {
				end := strings.IndexByte(s[i+1:], q)
				if end < 0 {
					return nil, errors.New("a quote is not closed (the JVM would refuse to start)")
				}
				b.WriteString(s[i+1 : i+1+end])
				i += end + 2
				continue
			}
			b.WriteByte(s[i])
			i++
		}
		opts = append(opts, b.String())
	}
	return opts, nil
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// SplitOptions splits an option string as Spark's launcher does
// (CommandBuilderUtils.parseOptionString, launcher 3.5.9 to 4.2.0):
// white space separates options; '...' is literal; "..." is literal but
// for a backslash, which takes the next character as it is, as it does
// outside quotes. An unclosed quote or a trailing backslash is an error,
// as the launcher refuses it.
func SplitOptions(s string) ([]string, error) {
	var opts []string
	var b strings.Builder
	inOpt, single, double, escape := false, false, false, false
	for _, r := range s {
		switch {
		case escape:
			b.WriteRune(r)
			escape, inOpt = false, true
		case r == '\\' && !single:
			escape, inOpt = true, true
		case r == '\'' && !double:
			single, inOpt = !single, true
		case r == '"' && !single:
			double, inOpt = !double, true
		case javaWhitespace(r) && !single && !double:
			if inOpt {
				opts = append(opts, b.String())
				b.Reset()
				inOpt = false
			}
		default:
			b.WriteRune(r)
			inOpt = true
		}
	}
	if single || double || escape {
		return nil, errors.New("a quote is not closed or a backslash ends it (Spark's launcher would refuse it)")
	}
	if inOpt {
		opts = append(opts, b.String())
	}
	return opts, nil
}

// javaWhitespace is Java's Character.isWhitespace.
func javaWhitespace(r rune) bool {
	switch r {
	case '\u00A0', '\u2007', '\u202F':
		return false
	case '\t', '\n', '\v', '\f', '\r', '\u001C', '\u001D', '\u001E', '\u001F':
		return true
	}
	return unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp)
}

// SystemProperties are the Spark properties among JVM options: -Dkey=value
// (-Dkey alone sets ""), for keys that start with "spark.", which is what
// new SparkConf() loads from the system properties (SparkConf.loadFromSystemProperties).
func SystemProperties(opts []string) []Setting {
	var out []Setting
	for _, o := range opts {
		kv, ok := strings.CutPrefix(o, "-D")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "spark.") {
			out = append(out, Setting{Key: k, Value: v, From: "-D"})
		}
	}
	return out
}

// PySparkSubmitArgs reads PYSPARK_SUBMIT_ARGS, the spark-submit arguments
// a Python program's SparkContext launches the JVM with (pyspark's
// java_gateway.launch_gateway splits it with shlex.split; the default is
// "pyspark-shell"). Where shlex.split and SplitOptions could differ (a
// backslash), ok is false and the value is not read.
func PySparkSubmitArgs(value string) (s Submit, ok bool, err error) {
	if strings.ContainsRune(value, '\\') {
		return Submit{}, false, nil
	}
	words, err := SplitOptions(value)
	if err != nil {
		return Submit{}, true, err
	}
	s, err = ParseSubmit(words)
	return s, true, err
}
