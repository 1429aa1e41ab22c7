package sidecar

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// Spark's own exit codes (org.apache.spark.util.SparkExitCode in
// spark-core 3.5.9 and 4.3.0, read from the jars' bytecode): a JVM whose
// uncaught exception is an OutOfMemoryError exits with 52
// (SparkUncaughtExceptionHandler; an executor's task thread hands a fatal
// error to it), and a driver that reached spark.executor.maxNumFailures
// exits with 11.
const (
	exitCodeOOM                    = 52
	exitCodeTooManyExecutorFailure = 11
)

// ending is how the application ended: one of vocab's End* classes and a
// line for a human.
type ending struct {
	class   string
	message string
}

// failed tells whether the ending is a failure, for the Event's type.
func (e ending) failed() bool { return e.class != vocab.EndSucceeded }

// endFacts is what the sidecar knows when the Spark container has ended.
type endFacts struct {
	// spark is the Spark container's termination; nil when it was still
	// running as the sidecar was stopped.
	spark *corev1.ContainerStateTerminated
	// deleting is set when the driver pod is being deleted.
	deleting bool
	// exception is Spark's spark.exit-exception annotation (4.1+).
	exception string
	// executors are the executors that failed, counted by reason.
	executors failureCounts
	// quota and policy are the executor creations refused by a
	// ResourceQuota, and by the policy, its limits or admission.
	quota, policy refusals
	// deadline is the policy's sidecar.executorScheduleDeadlineSeconds.
	deadline time.Duration
}

// refusals counts refused executor creations and keeps the last reason.
type refusals struct {
	count int
	last  string
}

// classify says how the application ended. The Spark container's own end
// comes first: killed at its memory limit, or exited 0. Then a cause in
// the executors: lost to OOM (when the JVM failed by itself), creations
// refused (when no executor ever ran, or Spark gave up after too many
// executor failures), none scheduled within the deadline. Then a signal;
// else the failure is the application's own.
func classify(f endFacts) ending {
	t := f.spark
	switch {
	case t != nil && t.Reason == "OOMKilled":
		return ending{vocab.EndDriverOOMKilled, fmt.Sprintf("the kubelet killed the Spark container at its memory limit (OOMKilled, exit code %d): "+
			"raise the driver container's memory limit, or lower spark.driver.memory", t.ExitCode)}
	case t != nil && t.ExitCode == 0:
		return ending{vocab.EndSucceeded, "the Spark container exited 0" + f.executors.note()}
	}
	if e, ok := executorsCause(f); ok {
		return e
	}
	if t == nil || t.ExitCode > 128 {
		return ending{vocab.EndDriverKilled, ended(f)}
	}
	if why := cmp.Or(firstLine(f.exception), said(t.Message)); why != "" {
		return ending{vocab.EndUserError, ended(f) + ": " + why}
	}
	return ending{vocab.EndUserError, ended(f) + "; the Spark container's log has why"}
}

// exceptionLine matches a line that names an exception: Java's
// uncaught-exception line (`Exception in thread "main" x.y.ZException:
// ...`) or the last line of a Python traceback (`ValueError: ...`).
var exceptionLine = regexp.MustCompile(`^(?:Exception in thread "[^"]*" )?((?:[\w$]+\.)*[\w$]*(?:Exception|Error)(?::.*)?)$`)

// said is what the Spark container's termination message says of why it
// failed: the message itself when the program wrote one line to
// /dev/termination-log, else the last line that names an exception (the
// kubelet puts the log's tail there under terminationMessagePolicy
// FallbackToLogsOnError).
func said(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if len(lines) == 1 {
		return firstLine(lines[0])
	}
	for _, line := range slices.Backward(lines) {
		if m := exceptionLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			return cut(m[1], maxLine)
		}
	}
	return ""
}

// executorsCause is the cause of a failure found in the executors, if any.
func executorsCause(f endFacts) (ending, bool) {
	x := f.executors
	jvmFailed := f.spark != nil && f.spark.ExitCode <= 128
	gaveUp := !x.ran || f.spark != nil && f.spark.ExitCode == exitCodeTooManyExecutorFailure
	switch {
	case x.nOOM > 0 && jvmFailed:
		return ending{vocab.EndExecutorsOOMKilled, fmt.Sprintf("%s%s; %d executor(s) were lost to OOM (%s): raise spark.executor.memory or "+
			"spark.executor.memoryOverhead", ended(f), prefixed(": ", firstLine(f.exception)), x.nOOM, x.oomNames())}, true
	case f.quota.count > 0 && gaveUp:
		return ending{vocab.EndQuotaRefused, fmt.Sprintf("%s after a ResourceQuota refused %d executor creation(s): %s",
			ended(f), f.quota.count, f.quota.last)}, true
	case f.policy.count > 0 && gaveUp:
		return ending{vocab.EndPolicyRefused, fmt.Sprintf("%s after %d executor creation(s) were refused: %s", ended(f), f.policy.count, f.policy.last)}, true
	case f.deadline > 0 && !x.scheduled && x.waited >= f.deadline:
		return ending{vocab.EndExecutorsNeverScheduled, fmt.Sprintf("%s with no executor scheduled in %s (policy sidecar.executorScheduleDeadlineSeconds: %s)%s",
			ended(f), x.waited.Round(time.Second), f.deadline, schedulerSays(x.unschedulable))}, true
	}
	return ending{}, false
}

// ended says how the Spark container ended, when it did not exit 0.
func ended(f endFacts) string {
	switch t := f.spark; {
	case t == nil:
		return "the sidecar was stopped while the Spark container was still running" + deletingNote(f.deleting)
	case t.ExitCode > 128:
		return "the Spark container ended on " + exitCode(t.ExitCode) + deletingNote(f.deleting)
	default:
		return fmt.Sprintf("the application failed (exit code %d)", t.ExitCode)
	}
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func deletingNote(deleting bool) string {
	if deleting {
		return "; the pod is being deleted"
	}
	return ""
}

// exitCode names a container's exit code, with its signal above 128.
func exitCode(code int32) string {
	if code <= 128 {
		return fmt.Sprintf("exit code %d", code)
	}
	names := map[int32]string{1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
	sig := names[code-128]
	if sig == "" {
		sig = fmt.Sprintf("signal %d", code-128)
	}
	return fmt.Sprintf("exit code %d (%s)", code, sig)
}

// maxLine bounds the exception's line in a message.
const maxLine = 512

// firstLine is the first non-blank line of s, cut to maxLine bytes.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return cut(line, maxLine)
		}
	}
	return ""
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
