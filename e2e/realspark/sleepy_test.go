package realspark

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// sleepy is a run of package sleepyjob's job: tasks tasks of sleepMS
// each, then idle seconds with no work.
type sleepy struct {
	tasks, sleepMS, idle int
	conf                 string // Spark properties, spark-defaults format
	// files go into /opt/job beside the script.
	files map[string]string
	// script is the testdata script run with the same arguments in
	// sleepy.py's place, when set.
	script string
}

func (j sleepy) job() sleepyjob.Job {
	job := sleepyjob.Job{Tasks: j.tasks, SleepMS: j.sleepMS, Idle: j.idle, Conf: j.conf, Files: j.files, Script: j.script}
	if j.script != "" {
		text, err := os.ReadFile("testdata/" + j.script)
		if err != nil {
			panic(err) // the tests' own testdata
		}
		job.ScriptText = string(text)
	}
	return job
}

// sleepyDriver is the driver pod's name.
const sleepyDriver = "sleepy"

// start creates the job's ConfigMap and its plain driver pod in ns, with
// the image of dist, and returns the pod as admitted.
func (j sleepy) start(t *testing.T, ns string, d spark.Dist) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, j.job().ConfigMap("sleepy-job"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := j.job().DriverPod(sleepyDriver, d.Version, cm.Name, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	})
	created, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Pods(ns).Delete(context.Background(), sleepyDriver, metav1.DeleteOptions{})
	})
	return created
}

// checkSum checks the sum the job printed.
func (j sleepy) checkSum(t *testing.T, driverLog string) {
	t.Helper()
	if err := j.job().CheckSum(driverLog); err != nil {
		t.Error(err)
	}
}

// trackExecutors follows the executor pods of ns until t ends.
func trackExecutors(t *testing.T, ns string) *executors.Tracker {
	t.Helper()
	return executors.Track(t, env.Client, ns)
}

// run starts the job in a namespace of the test's own, tracking its
// executors, and returns once the driver's Spark container runs.
func (j sleepy) run(t *testing.T, d spark.Dist) (ns string, execs *executors.Tracker, appID string) {
	t.Helper()
	ns = namespace(t)
	execs = trackExecutors(t, ns)
	j.start(t, ns, d)
	running := waitPod(t, ns, sleepyDriver, "ran its driver container", 3*time.Minute, containerRunning("spark"))
	return ns, execs, running.Labels[vocab.LabelAppID]
}

// waitFor polls cond, about the job in ns, until it holds or timeout passes.
func waitFor(t *testing.T, ns, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	waitForPod(t, ns, sleepyDriver, what, timeout, cond)
}

// waitForPod polls cond, about the driver pod ns/pod, until it holds or
// timeout passes, and fails with the tail of the pod's logs.
func waitForPod(t *testing.T, ns, pod, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("never %s within %v\n%s", what, timeout, driverLogTail(ns, pod))
	}
}

// failureDists are the versions the failure tests run on: the oldest and
// the newest pinned line.
func failureDists(t *testing.T) []spark.Dist {
	t.Helper()
	if len(dists) == 0 {
		t.Fatal("no pinned Spark versions")
	}
	if len(dists) == 1 {
		return dists
	}
	return []spark.Dist{dists[0], dists[len(dists)-1]}
}
