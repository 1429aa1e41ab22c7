package sidecar

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func exited(code int32, reason string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}
}

// oomLost counts n executors lost to OOM, as executorEnds would.
func oomLost(n int, ran bool) failureCounts {
	f := failureCounts{ran: ran}
	for i := range n {
		f.add("pi-exec-"+string(rune('1'+i)), &executorFailure{reason: "OOMKilled", oom: true})
	}
	return f
}

func TestClassify(t *testing.T) {
	const npe = "java.lang.NumberFormatException: For input string: \"x\"\n\tat java.base/java.lang.NumberFormatException.forInputString"
	quota := refusals{count: 3, last: `pods is forbidden: exceeded quota: q`}
	policy := refusals{count: 2, last: "sparklet policy: image evil/spark is not allowed"}
	ran := failureCounts{ran: true}
	for _, c := range []struct {
		name     string
		facts    endFacts
		class    string
		message  []string // substrings
		unwanted string
	}{
		{"exit 0", endFacts{spark: exited(0, "Completed"), executors: ran}, vocab.EndSucceeded, []string{"exited 0"}, "failed"},
		{"exit 0 after executors failed", endFacts{spark: exited(0, "Completed"), executors: oomLost(2, true)}, vocab.EndSucceeded,
			[]string{"exited 0", "2 executor(s) failed: 2 OOMKilled (pi-exec-1, pi-exec-2)"}, ""},
		{"exception annotated (4.1+)", endFacts{spark: exited(1, "Error"), exception: npe, executors: ran}, vocab.EndUserError,
			[]string{"exit code 1", `java.lang.NumberFormatException: For input string: "x"`}, "\tat"},
		{"a termination message of one line", endFacts{spark: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "input bucket missing\n"}},
			vocab.EndUserError, []string{"exit code 2): input bucket missing"}, ""},
		{"the log's tail as the termination message", endFacts{spark: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "25/11/27 INFO SparkContext: start\n" +
			"Exception in thread \"main\" java.lang.NumberFormatException: For input string: \"x\"\n\tat java.base/java.lang.Integer.parseInt\n" +
			"25/11/27 INFO ShutdownHookManager: Deleting directory /tmp/spark-1\n"}},
			vocab.EndUserError, []string{`exit code 1): java.lang.NumberFormatException: For input string: "x"`}, "Exception in thread"},
		{"a Python traceback's last line", endFacts{spark: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "Traceback (most recent call last):\n" +
			"  File \"/opt/job/x.py\", line 3, in <module>\nValueError: invalid literal for int() with base 10: 'x'\nINFO ShutdownHookManager: Shutdown hook called"}},
			vocab.EndUserError, []string{"exit code 1): ValueError: invalid literal for int() with base 10: 'x'"}, ""},
		{"a log tail without an exception", endFacts{spark: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "INFO a\nINFO b\n"}},
			vocab.EndUserError, []string{"log has why"}, "INFO"},
		{"exit 1 without an annotation (3.5, 4.0)", endFacts{spark: exited(1, "Error"), executors: ran}, vocab.EndUserError,
			[]string{"exit code 1", "log has why"}, ""},
		{"driver OOMKilled", endFacts{spark: exited(137, "OOMKilled"), executors: oomLost(1, true)}, vocab.EndDriverOOMKilled,
			[]string{"memory limit", "137"}, ""},
		{"driver SIGTERM while deleted", endFacts{spark: exited(143, "Error"), deleting: true}, vocab.EndDriverKilled,
			[]string{"exit code 143 (SIGTERM)", "being deleted"}, ""},
		{"driver SIGKILL", endFacts{spark: exited(137, "Error")}, vocab.EndDriverKilled, []string{"SIGKILL"}, "deleted"},
		{"stopped before the container ended", endFacts{}, vocab.EndDriverKilled, []string{"still running"}, ""},
		{"executors lost to OOM", endFacts{spark: exited(1, "Error"), exception: "org.apache.spark.SparkException: Job aborted",
			executors: oomLost(5, true)}, vocab.EndExecutorsOOMKilled,
			[]string{"exit code 1): org.apache.spark.SparkException: Job aborted; 5 executor(s) were lost to OOM (pi-exec-1 OOMKilled, pi-exec-2 OOMKilled, pi-exec-3 OOMKilled, ...)"}, ""},
		{"OOM before a quota refusal", endFacts{spark: exited(11, "Error"), executors: oomLost(1, true), quota: quota}, vocab.EndExecutorsOOMKilled, nil, ""},
		{"quota, no executor ever ran", endFacts{spark: exited(1, "Error"), quota: quota}, vocab.EndQuotaRefused,
			[]string{"refused 3 executor creation(s)", "exceeded quota"}, ""},
		{"quota, Spark gave up (exit 11)", endFacts{spark: exited(11, "Error"), executors: ran, quota: quota, policy: policy}, vocab.EndQuotaRefused, nil, ""},
		{"policy, no executor ever ran", endFacts{spark: exited(1, "Error"), policy: policy}, vocab.EndPolicyRefused,
			[]string{"2 executor creation(s) were refused", "image evil/spark"}, ""},
		{"driver SIGTERM after executors were lost to OOM", endFacts{spark: exited(143, "Error"), executors: oomLost(1, true)}, vocab.EndDriverKilled,
			[]string{"SIGTERM"}, "OOM"},
		{"killed with no executor scheduled past the deadline", endFacts{spark: exited(143, "Error"), deadline: 10 * time.Minute,
			executors: failureCounts{waited: 11 * time.Minute, unschedulable: "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."}},
			vocab.EndExecutorsNeverScheduled, []string{"SIGTERM", "no executor scheduled in 11m0s", "10m0s", "Insufficient cpu"}, ""},
		{"quota before never scheduled", endFacts{spark: exited(1, "Error"), quota: quota, deadline: time.Minute,
			executors: failureCounts{waited: time.Hour}}, vocab.EndQuotaRefused, nil, ""},
		{"failed before the deadline", endFacts{spark: exited(1, "Error"), exception: npe, deadline: 10 * time.Minute,
			executors: failureCounts{waited: time.Minute}}, vocab.EndUserError, []string{"NumberFormatException"}, "scheduled"},
		{"executors scheduled, never ran", endFacts{spark: exited(143, "Error"), deadline: time.Minute,
			executors: failureCounts{waited: 0, scheduled: true}}, vocab.EndDriverKilled, nil, "scheduled"},
		{"refusals, executors ran, the application threw", endFacts{spark: exited(1, "Error"), executors: ran, quota: quota, exception: npe},
			vocab.EndUserError, []string{"NumberFormatException"}, "quota"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := classify(c.facts)
			if e.class != c.class {
				t.Errorf("class %s, want %s (%s)", e.class, c.class, e.message)
			}
			for _, m := range c.message {
				if !strings.Contains(e.message, m) {
					t.Errorf("message %q lacks %q", e.message, m)
				}
			}
			if c.unwanted != "" && strings.Contains(e.message, c.unwanted) {
				t.Errorf("message %q has %q", e.message, c.unwanted)
			}
			if strings.Contains(e.message, "\n") {
				t.Errorf("message %q is more than a line", e.message)
			}
			if e.failed() != (c.class != vocab.EndSucceeded) {
				t.Errorf("failed() = %v", e.failed())
			}
		})
	}
}

func TestFirstLineIsCut(t *testing.T) {
	long := strings.Repeat("é", maxLine) // 2 bytes a rune
	got := firstLine("\n  \n" + long + "\nsecond")
	if len(got) > maxLine+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("firstLine = %q (%d bytes)", got, len(got))
	}
	if strings.ContainsRune(strings.TrimSuffix(got, "…"), '\uFFFD') {
		t.Errorf("cut inside a rune: %q", got)
	}
	if got := firstLine(""); got != "" {
		t.Errorf("firstLine(\"\") = %q", got)
	}
}
