package patches

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/submitargs"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// containerEnv is a container's environment as the kubelet will set it,
// as far as admission can know it.
type containerEnv struct {
	known map[string]string
	// unknown maps the names whose value admission cannot know to where
	// the value comes from.
	unknown map[string]string
	// envFrom is set when envFrom may define names the pod does not list.
	envFrom bool
}

// envOf resolves c's env, with the driver policy's env as the policy step
// will set it, in order, as the kubelet does (kubelet_pods.go
// makeEnvironmentVariables): envFrom first, then each env entry, whose
// $(NAME) references see the entries before it.
func envOf(c *corev1.Container, rules policy.PodRules) containerEnv {
	list := slices.Clone(c.Env)
	for _, v := range rules.Defaults.Env {
		list = upsert(list, v, envName, false)
	}
	for _, v := range rules.Enforced.Env {
		list = upsert(list, v, envName, true)
	}
	e := containerEnv{known: map[string]string{}, unknown: map[string]string{}, envFrom: len(c.EnvFrom) > 0}
	for _, v := range list {
		delete(e.known, v.Name)
		delete(e.unknown, v.Name)
		if v.ValueFrom != nil {
			e.unknown[v.Name] = valueSource(v.ValueFrom)
			continue
		}
		value, names := submitargs.Expand(v.Value, e.lookup)
		if len(names) > 0 {
			e.unknown[v.Name] = "its reference to " + refs(names)
			continue
		}
		e.known[v.Name] = value
	}
	return e
}

func valueSource(s *corev1.EnvVarSource) string {
	switch {
	case s.SecretKeyRef != nil:
		return "Secret " + s.SecretKeyRef.Name
	case s.ConfigMapKeyRef != nil:
		return "ConfigMap " + s.ConfigMapKeyRef.Name
	case s.FieldRef != nil:
		return "field " + s.FieldRef.FieldPath
	case s.ResourceFieldRef != nil:
		return "resource " + s.ResourceFieldRef.Resource
	}
	return "valueFrom"
}

// lookup is the kubelet's mapping for $(NAME): defined when the container
// has NAME, or may have it through envFrom.
func (e containerEnv) lookup(name string) (value string, defined, known bool) {
	if v, ok := e.known[name]; ok {
		return v, true, true
	}
	_, unknown := e.unknown[name]
	return "", unknown || e.envFrom, false
}

// unknownMark stands in the expanded command line for a reference whose
// value admission does not know.
const unknownMark = "\x00"

// expandCommand is c's command and args as the kubelet runs them, with
// unknownMark around each reference whose value admission does not know,
// and the names of those.
func (e containerEnv) expandCommand(c *corev1.Container) (command, args, unknown []string) {
	lookup := func(name string) (string, bool, bool) {
		v, defined, known := e.lookup(name)
		if defined && !known {
			unknown = append(unknown, name)
			return unknownMark + "$(" + name + ")" + unknownMark, true, true
		}
		return v, defined, known
	}
	expand := func(words []string) []string {
		if words == nil {
			return nil
		}
		out := make([]string, len(words))
		for i, w := range words {
			out[i], _ = submitargs.Expand(w, lookup)
		}
		return out
	}
	command, args = expand(c.Command), expand(c.Args)
	slices.Sort(unknown)
	return command, args, slices.Compact(unknown)
}

// readsUnknown tells whether what spark-submit reads of cmd (its options
// and primary resource, or why it was not read) holds a value admission
// does not know; the application's own arguments do not count.
func readsUnknown(cmd submitargs.Command) bool {
	if strings.Contains(cmd.Unchecked+cmd.Submit.Resource, unknownMark) {
		return true
	}
	return slices.ContainsFunc(cmd.Submit.Options, func(o submitargs.Option) bool {
		return strings.Contains(o.Name+o.Value, unknownMark)
	})
}

func refs(names []string) string { return "$(" + strings.Join(names, "), $(") + ")" }

// submitEnvNames are the names of submitargs.SubmitEnv in order.
var submitEnvNames = sortedKeys(submitargs.SubmitEnv)

// readEnvRoutes reads the Spark properties that c's environment gives the
// driver JVM where its command line does not show them, as layers from
// the lowest: the -Dspark.* system properties of the JVM's options, in the
// order the JVM applies them (submitargs.JVMOptionEnv, with the launcher's
// spark.driver.defaultJavaOptions and extraJavaOptions from the user's
// layers after SPARK_SUBMIT_OPTS, as SparkSubmitCommandBuilder adds them
// in client mode), then spark-submit's own variables (submitargs.SubmitEnv).
// Spark's conf file wins over all of them: SparkSubmit starts from new
// SparkConf(), which holds the system properties, and sets the file's and
// the command line's properties over it (SparkSubmitArguments.toSparkConf,
// 3.5.9 to 4.1.0), and the variables count only for keys nothing else
// sets (loadEnvironmentArguments). What admission cannot know it warns of.
func readEnvRoutes(c *corev1.Container, env containerEnv, cmd submitargs.Command, user []confSource, p *plan) ([]confSource, error) {
	prefix := fmt.Sprintf("container %q env ", c.Name)
	what := func(name string) string { return prefix + name }
	var low []confSource
	for _, name := range submitargs.JVMOptionEnv {
		value, ok := env.value(name, p, what(name), "the Spark properties its -D options set")
		if ok {
			split := submitargs.SplitOptions
			if name == "JAVA_TOOL_OPTIONS" || name == "_JAVA_OPTIONS" {
				split = submitargs.SplitJVMOptions
			}
			opts, err := split(value)
			if err != nil {
				return nil, &Refused{Reason: "bad-env", Message: fmt.Sprintf("%s: %v; fix its quoting", what(name), err)}
			}
			if props := submitargs.SystemProperties(opts); len(props) > 0 {
				low = append(low, settingsSource(what(name), props))
			}
		}
		if name == "SPARK_SUBMIT_OPTS" {
			opts, err := driverJavaOptions(user)
			if err != nil {
				return nil, err
			}
			low = append(low, opts...)
		}
	}
	for _, name := range submitEnvNames {
		if value, ok := env.value(name, p, what(name), "the Spark property it sets"); ok {
			low = append(low, confSource{what: what(name), conf: map[string]string{submitargs.SubmitEnv[name]: value}})
		}
	}
	warnShellEnv(c, env, cmd, p)
	return low, nil
}

// driverJavaOptions are the -Dspark.* system properties of the driver's
// Java options, as the user's layers (the last that sets each key wins)
// give them.
func driverJavaOptions(user []confSource) ([]confSource, error) {
	var out []confSource
	for _, key := range []string{"spark.driver.defaultJavaOptions", "spark.driver.extraJavaOptions"} {
		var value, setter string
		for _, src := range user {
			if v, ok := src.conf[key]; ok {
				value, setter = v, src.setter(key)
			}
		}
		if value == "" {
			continue
		}
		opts, err := submitargs.SplitOptions(value)
		if err != nil {
			return nil, &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("%s sets %s: %v; fix its quoting", setter, key, err)}
		}
		if props := submitargs.SystemProperties(opts); len(props) > 0 {
			out = append(out, settingsSource(setter+" sets "+key+":", props))
		}
	}
	return out, nil
}

// value is the env var name's value when admission knows it; when it
// cannot, it warns that what the variable carries was not checked.
func (e containerEnv) value(name string, p *plan, what, carries string) (string, bool) {
	if from, ok := e.unknown[name]; ok {
		p.warn(fmt.Sprintf("%s comes from %s, not known at admission: %s were not checked (the sidecar enforces the executor policy at run time)",
			what, from, carries))
		return "", false
	}
	v, ok := e.known[name]
	return v, ok
}

// readPySparkSubmitArgs reads PYSPARK_SUBMIT_ARGS, the command line of the
// spark-submit a Python program's SparkContext starts, as its container's
// command line.
func readPySparkSubmitArgs(c *corev1.Container, env containerEnv, p *plan) (confSource, error) {
	what := fmt.Sprintf("container %q env PYSPARK_SUBMIT_ARGS", c.Name)
	src := confSource{what: what, conf: map[string]string{}}
	value, ok := env.value("PYSPARK_SUBMIT_ARGS", p, what, "the spark-submit options in it")
	if !ok {
		return src, nil
	}
	s, read, err := submitargs.PySparkSubmitArgs(value)
	if !read {
		p.warn(fmt.Sprintf("%s: its spark-submit options were not checked: it has a backslash, which Python's shlex.split and "+
			"Spark read differently; put them in the %s annotation", what, vocab.AnnotationSparkConf))
		return src, nil
	}
	if err != nil {
		return src, &Refused{Reason: "bad-env", Message: fmt.Sprintf("%s: %v; spark-submit would refuse it too, fix it", what, err)}
	}
	args, err := readSubmit(what, s, p)
	return confSource{what: what, conf: args.conf, from: args.from}, err
}

// warnShellEnv warns of BASH_ENV, which every bash that runs a script
// sources first: the image's /opt/entrypoint.sh and Spark's bin/ scripts
// are bash scripts, so it runs before spark-submit whatever the command
// line (bash(1), INVOCATION); and of ENV, which an interactive sh or
// bash sources.
func warnShellEnv(c *corev1.Container, env containerEnv, cmd submitargs.Command, p *plan) {
	for _, name := range []string{"BASH_ENV", "ENV"} {
		v, known := env.known[name]
		_, unknown := env.unknown[name]
		if !known && !unknown || name == "ENV" && !cmd.Interactive {
			continue
		}
		if !known {
			v = "a file named at run time"
		}
		// Kept short: the API server may truncate a warning over 256
		// characters.
		p.warn(fmt.Sprintf("container %q env %s: the shell sources %s before Spark starts, and what it sets was not checked "+
			"(the sidecar enforces the executor policy at run time)", c.Name, name, v))
	}
}

func settingsSource(what string, settings []submitargs.Setting) confSource {
	s := confSource{what: what, conf: map[string]string{}, from: map[string]string{}}
	for _, st := range settings {
		s.conf[st.Key], s.from[st.Key] = st.Value, st.From+st.Key
	}
	return s
}
