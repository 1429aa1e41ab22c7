package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/patches/submitargs"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// argConf is the Spark configuration the Spark container's command line
// sets, and for each key the option that set it last.
type argConf struct {
	conf map[string]string
	from map[string]string
}

// readArgs reads the Spark container's command line as spark-submit would
// (patches/submitargs), after the kubelet's $(VAR) expansion. It refuses
// what spark-submit would refuse and what sparklet cannot deliver, and
// warns when the command line cannot be read.
func readArgs(c *corev1.Container, env containerEnv, p *plan) (argConf, submitargs.Command, error) {
	command, args, unknown := env.expandCommand(c)
	cmd, err := submitargs.Read(command, args)
	if len(unknown) > 0 && (err != nil || readsUnknown(cmd)) {
		p.warn(fmt.Sprintf("container %q: its command line refers to %s, whose value is not known at admission; "+
			"Spark options in it were not checked (the sidecar enforces the executor policy at run time)", c.Name, refs(unknown)))
		return argConf{conf: map[string]string{}, from: map[string]string{}}, submitargs.Command{}, nil
	}
	if err != nil {
		return argConf{}, cmd, &Refused{Reason: "bad-args", Message: fmt.Sprintf(
			"container %q: %v; spark-submit would refuse it too, fix the command line", c.Name, err)}
	}
	if cmd.Unchecked != "" {
		// Kept short: the API server may truncate a warning over 256
		// characters.
		p.warn(fmt.Sprintf("container %q: Spark options in its arguments were not checked: %s; put them in the %s annotation",
			c.Name, cmd.Unchecked, vocab.AnnotationSparkConf))
	}
	out, err := readSubmit(fmt.Sprintf("container %q", c.Name), cmd.Submit, p)
	return out, cmd, err
}

// readSubmit reads spark-submit's options, which what (a container's
// command line, or PYSPARK_SUBMIT_ARGS) passes.
func readSubmit(what string, s submitargs.Submit, p *plan) (argConf, error) {
	out := argConf{conf: map[string]string{}, from: map[string]string{}}
	if f, ok := s.Last("--properties-file"); ok {
		return out, &Refused{Reason: "properties-file", Message: fmt.Sprintf(
			"%s passes --properties-file %s, which stops Spark 3.5 from reading the configuration sparklet "+
				"delivers in spark-defaults.conf; move its properties into the %s annotation",
			what, f, vocab.AnnotationSparkConf)}
	}
	if f, ok := s.Last("--extra-properties-file"); ok {
		p.warn(fmt.Sprintf("%s: the properties in --extra-properties-file %s were not checked; put them in the %s annotation",
			what, f, vocab.AnnotationSparkConf))
	}
	settings, err := s.Conf()
	if err != nil {
		return out, &Refused{Reason: "bad-args", Message: fmt.Sprintf(
			"%s: %v; spark-submit would refuse it too, fix the command line", what, err)}
	}
	for _, st := range settings {
		out.conf[st.Key], out.from[st.Key] = st.Value, st.From
	}
	return out, nil
}

// confSource is one layer of the Spark configuration, named for messages.
// from, when set, names the option that set each key. The policy's own
// layers may set reserved and enforced keys (the policy validates them).
type confSource struct {
	what   string
	conf   map[string]string
	from   map[string]string
	policy bool
}

func (s confSource) setter(k string) string {
	if opt, ok := s.from[k]; ok {
		return s.what + " " + opt
	}
	return s.what
}

// check refuses a key or value spark-defaults.conf cannot hold safely, a
// key reserved for sparklet, a different value for an enforced key, and
// cluster deploy mode.
func (s confSource) check(p *plan) error {
	faulty := func(k, v string) bool { return s.fault(p, k, v) != nil }
	for _, k := range sortedWhere(s.conf, faulty) {
		return s.fault(p, k, s.conf[k])
	}
	return nil
}

// fault is check's refusal of one key and its value, nil when it has none.
func (s confSource) fault(p *plan, k, v string) error {
	if why := sparkconf.UnsafeText(k, v); why != "" {
		return &Refused{Reason: "unsafe-spark-conf", Message: fmt.Sprintf(
			"%s sets %q %s; a Spark property is one line of spark-defaults.conf, so remove it", s.setter(k), k, why)}
	}
	if why, ok := policy.Reserved[k]; ok && !s.policy {
		return &Refused{Reason: "reserved-key", Message: fmt.Sprintf("%s sets %s: %s; remove it", s.setter(k), k, why)}
	}
	if want, ok := p.pol.Spark.Enforced[k]; ok && v != want && !s.policy {
		return &Refused{Reason: "enforced-key", Message: fmt.Sprintf(
			"%s sets %s=%s, but the sparklet policy enforces %s=%s in namespace %s; remove it or use the enforced value",
			s.setter(k), k, v, k, want, p.in.Namespace)}
	}
	if k == "spark.submit.deployMode" && v == "cluster" {
		return &Refused{Reason: "cluster-mode", Message: fmt.Sprintf(
			"%s sets spark.submit.deployMode=cluster, which would make spark-submit create a second driver pod "+
				"instead of running the driver here; sparklet makes this pod the driver in client mode, so remove it "+
				"(or use --deploy-mode client)", s.setter(k))}
	}
	return nil
}

// warnForeign warns of the keys that do not start with "spark.": they are
// kept in the effective conf, but spark-submit drops them with a warning
// (SparkSubmitArguments.ignoreNonSparkProperties, 3.5.x to 4.x).
func (s confSource) warnForeign(p *plan) {
	if s.policy {
		return
	}
	foreign := func(k, _ string) bool { return !strings.HasPrefix(k, "spark.") }
	for _, k := range sortedWhere(s.conf, foreign) {
		p.warn(fmt.Sprintf("%s sets %s, which Spark ignores: it reads only keys that start with \"spark.\" "+
			"(for Hadoop and Hive, spark.hadoop.%s); kept in the effective conf", s.setter(k), k, k))
	}
}
