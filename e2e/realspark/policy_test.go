package realspark

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// hostPathTemplate is an executor pod template that mounts a node
// directory. The webhook cannot see it: Spark reads the file in the JVM
// (KubernetesUtils.loadPodFromTemplate) when it builds each executor, so
// the sidecar's executor policy is what refuses it.
const hostPathTemplate = `apiVersion: v1
kind: Pod
spec:
  volumes:
  - name: node-scratch
    hostPath: {path: /tmp}
`

// driverAccountTemplate is an executor pod template that names the driver's
// ServiceAccount, which Spark keeps over its own keys
// (ExecutorKubernetesCredentialsFeatureStep): the webhook cannot read it,
// so the sidecar refuses every such executor.
const driverAccountTemplate = `apiVersion: v1
kind: Pod
spec:
  serviceAccountName: spark-driver
`

// TestExecutorRefused runs a driver whose executors the policy refuses at
// runtime: the JVM gets the reason in its log, and its retries, one a
// second, fold into one Event on the driver pod. Deleted, the driver ends
// as PolicyRefused, with the reason.
func TestExecutorRefused(t *testing.T) {
	for _, tc := range []struct{ name, template, why string }{
		{"hostPath", hostPathTemplate,
			`mounts hostPath volume "node-scratch" (/tmp); the sparklet policy allows hostPath only with executor.defaults.allowHostPath: true`},
		{"driver-account", driverAccountTemplate, `would run as the driver's ServiceAccount "spark-driver", whose token may create pods`},
	} {
		for _, d := range failureDists(t) {
			t.Run(tc.name+"/"+d.Version, func(t *testing.T) { executorRefused(t, d, tc.template, tc.why) })
		}
	}
}

// executorRefused runs Spark d with the executor pod template and checks
// that every executor is refused, saying why.
func executorRefused(t *testing.T, d spark.Dist, template, why string) {
	ns := namespace(t)
	execs := trackExecutors(t, ns)
	job := sleepy{tasks: 2, sleepMS: 100, files: map[string]string{"executor-template.yaml": template},
		conf: sleepyjob.FixedConf + "spark.kubernetes.executor.podTemplateFile /opt/job/executor-template.yaml\n"}
	job.start(t, ns, d)
	waitPod(t, ns, sleepyDriver, "ran its driver container", 3*time.Minute, containerRunning("spark"))

	waitFor(t, ns, "three executors refused in the driver's log", 3*time.Minute, func() bool {
		return len(refusedExecutors(log(ns, sleepyDriver, "spark"))) >= 3
	})
	if !strings.Contains(log(ns, sleepyDriver, "spark"), why) {
		t.Errorf("the driver's log does not say why: %q", why)
	}
	// One Event, whose count grows as the retries go on.
	var events []corev1.Event
	waitFor(t, ns, "the ExecutorRefused Event counting the retries", time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": sleepyDriver, "reason": "ExecutorRefused"}.String()})
		if err != nil {
			return false
		}
		events = list.Items
		return len(events) > 1 || len(events) == 1 && events[0].Count > 1
	})
	refusals := len(refusedExecutors(log(ns, sleepyDriver, "spark")))
	if len(events) != 1 {
		t.Fatalf("%d ExecutorRefused Events on the driver pod, want 1", len(events))
	}
	if ev := events[0]; ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, why) || int(ev.Count) > refusals {
		t.Errorf("event %s count %d %q, want a Warning that says %q and counts at most the %d refusals", ev.Type, ev.Count, ev.Message, why, refusals)
	}
	if _, _, seen, _ := execs.Counts(); seen != 0 {
		t.Errorf("%d refused executor pods reached the API server", seen)
	}
	deleteDriver(t, ns)
	ended := checkEnded(t, ns, sleepyDriver, nil, vocab.EndPolicyRefused, why)
	t.Logf("Spark %s: %d executors refused, one Event with count %d; ended %s: %s", d.Version, refusals, events[0].Count, vocab.EndPolicyRefused, ended)
}

var refusedLine = regexp.MustCompile(`pods "([^"]+)" is forbidden: sparklet policy: `)

// refusedExecutors returns the executors the driver's log says were
// refused, each once.
func refusedExecutors(driverLog string) map[string]bool {
	names := map[string]bool{}
	for _, m := range refusedLine.FindAllStringSubmatch(driverLog, -1) {
		names[m[1]] = true
	}
	return names
}

// deleteDriver deletes the driver pod and waits until it is gone.
func deleteDriver(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, sleepyDriver, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "the driver pod gone", time.Minute, func() bool {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, sleepyDriver, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// Executor settings the policy enforces in the dynamic-allocation tests'
// namespaces, and the label it enforces on every executor
// (testdata/policy.yaml).
const (
	enforcedEnv, enforcedEnvValue       = "PLATFORM_TIER", "gold"
	enforcedAnnotation, enforcedAnnoVal = "platform.example.com/cost-center", "spark-e2e"
	enforcedLabel, enforcedLabelValue   = "platform.example.com/workload", "spark"
)

// checkEnforced checks that an executor pod carries the policy's enforced
// label, its namespace's enforced annotation and env var, and that its
// running JVM has the variable.
func checkEnforced(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if got := p.Labels[enforcedLabel]; got != enforcedLabelValue {
		t.Errorf("executor %s label %s=%q, want %q", p.Name, enforcedLabel, got, enforcedLabelValue)
	}
	if got := p.Annotations[enforcedAnnotation]; got != enforcedAnnoVal {
		t.Errorf("executor %s annotation %s=%q, want %q", p.Name, enforcedAnnotation, got, enforcedAnnoVal)
	}
	c := p.Spec.Containers[0]
	found := false
	for _, e := range c.Env {
		if e.Name == enforcedEnv {
			found = e.Value == enforcedEnvValue
		}
	}
	if !found {
		t.Errorf("executor %s container %s lacks the enforced env %s=%s", p.Name, c.Name, enforcedEnv, enforcedEnvValue)
	}
	pid, ok := env.Runner.ContainerPID(p.Namespace, p.Name, c.Name)
	if !ok {
		t.Errorf("executor %s is not running", p.Name)
		return
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	want := enforcedEnv + "=" + enforcedEnvValue
	for _, kv := range strings.Split(string(environ), "\x00") {
		if kv == want {
			return
		}
	}
	t.Errorf("executor %s's process (pid %d) lacks %s", p.Name, pid, want)
}
