package realspark

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// TestUserErrorEnding runs examples/spark-pi-job.yaml with slices that are
// not a number, a backoffLimit that would retry it twice, and a
// podFailurePolicy that fails the Job at once on the sidecar's condition
// sparklet.io/UserError. The driver pod ends with the class UserError in
// its Event, its annotation sparklet.io/ended and that condition (with
// Spark 4.1+'s exception in the message, the exit code before it), and
// the Job fails on its first pod.
func TestUserErrorEnding(t *testing.T) {
	for _, d := range oldestAndNewest() {
		t.Run(d.Version, func(t *testing.T) { userErrorEnding(t, d) })
	}
}

func userErrorEnding(t *testing.T, d spark.Dist) {
	ns := namespace(t)
	start := time.Now()
	kubectl(t, userErrorJob(t, d), "apply", "-n", ns, "-f", "-")
	var job *batchv1.Job
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := env.Client.BatchV1().Jobs(ns).Get(ctx, "spark-pi-job", metav1.GetOptions{})
		job = j
		return err == nil && (jobCondition(j, batchv1.JobFailed) || jobCondition(j, batchv1.JobComplete)), nil
	})
	pod := jobPod(t, ns, "spark-pi-job")
	if err != nil || !jobCondition(job, batchv1.JobFailed) {
		t.Fatalf("Job never failed (%v): %+v\n%s", err, job.Status, driverLogTail(ns, pod.Name))
	}
	elapsed := time.Since(start)
	if reason := failedReason(job); reason != batchv1.JobReasonPodFailurePolicy {
		t.Errorf("Job failed with reason %q, want %q (its podFailurePolicy on %s)", reason, batchv1.JobReasonPodFailurePolicy, vocab.ConditionPrefix+vocab.EndUserError)
	}
	if job.Status.Failed != 1 {
		t.Errorf("Job ran %d failed pods, want 1: the user error is not retried", job.Status.Failed)
	}
	want := "exit code 1"
	if d.Major > 4 || d.Major == 4 && d.Minor >= 1 {
		want = `java.lang.NumberFormatException: For input string: "not-a-number"`
	}
	msg := checkEnded(t, ns, pod.Name, pod, vocab.EndUserError, want)
	t.Logf("Spark %s: Job failed by its podFailurePolicy %v after apply; ended %s: %s", d.Version, elapsed.Round(time.Millisecond), vocab.EndUserError, msg)
	deleteJobs(t, ns)
}

// userErrorJob is examples/spark-pi-job.yaml for d, failing in its main
// method, and not to be retried on a user error.
func userErrorJob(t *testing.T, d spark.Dist) []byte {
	t.Helper()
	var job batchv1.Job
	if err := yaml.Unmarshal(example(t, "spark-pi-job.yaml", d), &job); err != nil {
		t.Fatal(err)
	}
	c := &job.Spec.Template.Spec.Containers[0]
	if n := len(c.Args); n == 0 || c.Args[n-1] != "100" {
		t.Fatalf("examples/spark-pi-job.yaml no longer ends its args with \"100\": %q", c.Args)
	}
	c.Args[len(c.Args)-1] = "not-a-number"
	job.Spec.BackoffLimit = new(int32(2))
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
			Type: corev1.PodConditionType(vocab.ConditionPrefix + vocab.EndUserError), Status: corev1.ConditionTrue}},
	}}}
	out, err := json.Marshal(&job)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkEnded checks that the driver pod ended as class, saying want, in
// its Event and, unless pod is nil (deleted), in its annotation
// sparklet.io/ended and its condition sparklet.io/<class>. It returns the
// Event's message.
func checkEnded(t *testing.T, ns, name string, pod *corev1.Pod, class, want string) string {
	t.Helper()
	ev := driverEvent(t, ns, name, class)
	wantType := corev1.EventTypeWarning
	if class == vocab.EndSucceeded {
		wantType = corev1.EventTypeNormal
	}
	if ev.Type != wantType || !strings.Contains(ev.Message, want) {
		t.Errorf("Event %s: %s %q, want a %s saying %q", class, ev.Type, ev.Message, wantType, want)
	}
	if pod == nil {
		return ev.Message
	}
	if ann := pod.Annotations[vocab.AnnotationEnded]; ann != class+": "+ev.Message {
		t.Errorf("%s = %q, want %q", vocab.AnnotationEnded, ann, class+": "+ev.Message)
	}
	if c := podCondition(pod, vocab.ConditionPrefix+class); c == nil || c.Status != corev1.ConditionTrue || c.Message != ev.Message {
		t.Errorf("condition %s = %+v, want True saying %q", vocab.ConditionPrefix+class, c, ev.Message)
	}
	return ev.Message
}

func failedReason(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

func podCondition(p *corev1.Pod, t string) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if string(c.Type) == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// driverEvent waits for the one Event with reason on the pod.
func driverEvent(t *testing.T, ns, pod, reason string) corev1.Event {
	t.Helper()
	var events []corev1.Event
	waitFor(t, ns, "the "+reason+" Event", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": pod, "reason": reason}.String()})
		if err != nil {
			return false
		}
		events = list.Items
		return len(events) > 0
	})
	if len(events) != 1 {
		t.Errorf("%d %s Events on %s, want 1: %+v", len(events), reason, pod, events)
	}
	return events[0]
}

// TestExecutorsOOMEnding runs testdata/oom.py, whose tasks outgrow their
// executors' heap: each executor's JVM exits with Spark's code for an
// OutOfMemoryError (52), and the application fails. The driver pod ends
// as ExecutorsOOMKilled, and one ExecutorsFailed Event counts the lost
// executors.
func TestExecutorsOOMEnding(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			job := sleepy{script: "oom.py", conf: sleepyjob.FixedConf + "spark.task.maxFailures 2\n"}
			ns, execs, _ := job.run(t, d)
			done := waitPod(t, ns, sleepyDriver, "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodFailed {
				t.Fatalf("driver pod %s, want Failed\n%s", done.Status.Phase, driverLogTail(ns, sleepyDriver))
			}
			if !strings.Contains(log(ns, sleepyDriver, "spark"), "exit code 52") {
				t.Errorf("the driver's log does not say an executor exited with code 52\n%s", driverLogTail(ns, sleepyDriver))
			}
			msg := checkEnded(t, ns, sleepyDriver, done, vocab.EndExecutorsOOMKilled, "lost to OOM")
			failed := lastEvent(t, ns, sleepyDriver, "ExecutorsFailed")
			if !strings.Contains(failed.Message, "OutOfMemoryError (exit code 52)") {
				t.Errorf("ExecutorsFailed: %q, want the executors' exit code 52 counted", failed.Message)
			}
			_, _, seen, _ := execs.Counts()
			t.Logf("Spark %s: %d executors; ended %s: %s; ExecutorsFailed: %s", d.Version, seen, vocab.EndExecutorsOOMKilled, msg, failed.Message)
		})
	}
}

// lastEvent is the latest Event with reason on the pod.
func lastEvent(t *testing.T, ns, pod, reason string) corev1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": pod, "reason": reason}.String()})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("no %s Event on %s: %v", reason, pod, err)
	}
	last := list.Items[0]
	for _, e := range list.Items[1:] {
		if e.LastTimestamp.After(last.LastTimestamp.Time) {
			last = e
		}
	}
	return last
}

// TestQuotaRefusedEnding runs the sleepy job in a namespace whose
// ResourceQuota has room for the driver pod alone: every executor is
// refused. Spark 4.3 gives up on its own after spark.executor.maxNumFailures
// refused creations (registerPodCreationFailure, in the 4.3.0 jar); Spark
// 3.5 waits for executors until the driver pod is deleted. Either way the driver ends as QuotaRefused,
// with the API server's refusal.
func TestQuotaRefusedEnding(t *testing.T) {
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) {
			ns := namespace(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "one-pod"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
			if _, err := env.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ns, "the quota counted", time.Minute, func() bool {
				q, err := env.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "one-pod", metav1.GetOptions{})
				return err == nil && q.Status.Hard.Pods() != nil && !q.Status.Hard.Pods().IsZero()
			})
			job := sleepy{tasks: 2, sleepMS: 100, conf: sleepyjob.FixedConf}
			job.start(t, ns, d)
			driverEvent(t, ns, sleepyDriver, "ExecutorQuota")
			var pod *corev1.Pod
			if d.Major > 4 || d.Major == 4 && d.Minor >= 3 {
				pod = waitPod(t, ns, sleepyDriver, "failed", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
				if pod.Status.Phase != corev1.PodFailed {
					t.Fatalf("driver pod %s, want Failed\n%s", pod.Status.Phase, driverLogTail(ns, sleepyDriver))
				}
			} else {
				deleteDriver(t, ns)
			}
			msg := checkEnded(t, ns, sleepyDriver, pod, vocab.EndQuotaRefused, "exceeded quota")
			t.Logf("Spark %s: ended %s: %s", d.Version, vocab.EndQuotaRefused, msg)
		})
	}
}
