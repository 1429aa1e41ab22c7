package sidecar

import (
	"fmt"
	"strings"
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
}

// refusals counts refused executor creations and keeps the last reason.
type refusals struct {
	count int
	last  string
}

// classify says how the application ended. Its own end comes first: a
// driver killed by the kubelet or a signal says nothing of the
// application. Then what made the JVM fail beyond its code: executors lost
// to OOM, creations refused (when no executor ever ran, or Spark gave up
// after too many executor failures); else the failure is the application's.
func classify(f endFacts) ending {
	t := f.spark
	switch {
	case t == nil:
		return ending{vocab.EndDriverKilled, "the sidecar was stopped while the Spark container was still running" + deletingNote(f.deleting)}
	case t.Reason == "OOMKilled":
		return ending{vocab.EndDriverOOMKilled, fmt.Sprintf("the kubelet killed the Spark container at its memory limit (OOMKilled, exit code %d): "+
			"raise the driver container's memory limit, or lower spark.driver.memory", t.ExitCode)}
	case t.ExitCode == 0:
		return ending{vocab.EndSucceeded, "the Spark container exited 0" + f.executors.note()}
	case t.ExitCode > 128:
		return ending{vocab.EndDriverKilled, fmt.Sprintf("the Spark container ended on %s", exitCode(t.ExitCode)) + deletingNote(f.deleting)}
	}
	failedWith := fmt.Sprintf("the application failed (exit code %d)", t.ExitCode)
	why := firstLine(f.exception)
	if why != "" {
		why = ": " + why
	}
	gaveUp := t.ExitCode == exitCodeTooManyExecutorFailure || !f.executors.ran
	switch {
	case f.executors.nOOM > 0:
		return ending{vocab.EndExecutorsOOMKilled, fmt.Sprintf("%s after %d executor(s) were lost to OOM (%s): raise spark.executor.memory or "+
			"spark.executor.memoryOverhead%s", failedWith, f.executors.nOOM, f.executors.oomNames(), why)}
	case f.quota.count > 0 && gaveUp:
		return ending{vocab.EndQuotaRefused, fmt.Sprintf("%s after a ResourceQuota refused %d executor creation(s): %s",
			failedWith, f.quota.count, f.quota.last)}
	case f.policy.count > 0 && gaveUp:
		return ending{vocab.EndPolicyRefused, fmt.Sprintf("%s after %d executor creation(s) were refused: %s", failedWith, f.policy.count, f.policy.last)}
	case why != "":
		return ending{vocab.EndUserError, failedWith + why}
	}
	return ending{vocab.EndUserError, failedWith + "; the Spark container's log has why"}
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
