package realspark

import (
	"context"
	"math"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/vocab"
)

// oldestAndNewest are the pins the Job and CronJob cases run on: a run
// takes 15 s or more, and the pod-level behaviour under test is the same
// for every pin.
func oldestAndNewest() []spark.Dist {
	if len(dists) < 2 {
		return dists
	}
	return []spark.Dist{dists[0], dists[len(dists)-1]}
}

// TestSparkPiJob applies examples/spark-pi-job.yaml: the Job controller
// creates the driver pod from a template with only generateName, the pod
// completes when the driver exits, and so does the Job.
func TestSparkPiJob(t *testing.T) {
	e2egate.ProvenOnNode(t, "TestHelmInstall/Job")
	for _, d := range oldestAndNewest() {
		t.Run(d.Version, func(t *testing.T) {
			ns := namespace(t)
			execs := trackExecutors(t, ns)
			start := time.Now()
			kubectl(t, example(t, "spark-pi-job.yaml", d), "apply", "-n", ns, "-f", "-")

			appID := checkJobRun(t, ns, "spark-pi-job", execs)
			t.Logf("Spark %s: Job %s (%s) complete and clean %v after apply", d.Version, "spark-pi-job", appID, time.Since(start).Round(time.Millisecond))
			deleteJobs(t, ns)
		})
	}
}

// TestSparkPiCronJob applies examples/spark-pi-cronjob.yaml, suspended so
// that its schedule cannot start a run during the test, and runs it twice
// as `kubectl create job --from=cronjob/...` does. The two runs, which
// overlap, are two applications with ids of their own, and each one's
// executors are its own.
//
// It runs beside e2e/node's CronJob subtest, which runs the example once:
// two overlapping runs on the real node beside the rest of make test did
// not finish within 4 minutes on two cores.
func TestSparkPiCronJob(t *testing.T) {
	t.Parallel()
	for _, d := range oldestAndNewest() {
		t.Run(d.Version, func(t *testing.T) {
			manifest, cronJob := fixtures.Suspended(t, example(t, "spark-pi-cronjob.yaml", d))
			ns := namespace(t)
			execs := trackExecutors(t, ns)
			start := time.Now()
			kubectl(t, manifest, "apply", "-n", ns, "-f", "-")
			runs := []string{"spark-pi-run-1", "spark-pi-run-2"}
			for _, run := range runs {
				kubectl(t, nil, "create", "job", run, "--from=cronjob/"+cronJob, "-n", ns)
			}

			ids := map[string]string{}
			for _, run := range runs {
				appID := checkJobRun(t, ns, run, execs)
				if other, ok := ids[appID]; ok {
					t.Errorf("runs %s and %s share the application id %s", other, run, appID)
				}
				ids[appID] = run
			}
			t.Logf("Spark %s: runs %v complete and clean %v after apply", d.Version, ids, time.Since(start).Round(time.Millisecond))
			deleteJobs(t, ns)
		})
	}
}

// checkJobRun waits for the Job to complete and checks its one driver pod
// and that pod's application: Succeeded, its SparkPi result, exactly two
// executors of its own, nothing left behind. It returns the application id.
func checkJobRun(t *testing.T, ns, job string, execs *executors.Tracker) string {
	t.Helper()
	var last *batchv1.Job
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := env.Client.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j
		return jobCondition(j, batchv1.JobComplete) || jobCondition(j, batchv1.JobFailed), nil
	})
	pod := jobPod(t, ns, job)
	if err != nil || !jobCondition(last, batchv1.JobComplete) {
		var status any
		if last != nil {
			status = last.Status
		}
		t.Fatalf("Job %s never completed (%v); status %+v\n%s", job, err, status, driverLogTail(ns, pod.Name))
	}
	if pod.GenerateName == "" {
		t.Errorf("Job %s's pod %s has no generateName", job, pod.Name)
	}
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("Job %s's pod %s is %s, want Succeeded\n%s", job, pod.Name, pod.Status.Phase, driverLogTail(ns, pod.Name))
	}
	appID := pod.Labels[vocab.LabelAppID]
	if appID == "" {
		t.Fatalf("Job %s's pod %s has no %s label", job, pod.Name, vocab.LabelAppID)
	}
	if pi := piValue(t, log(ns, pod.Name, "spark")); math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("Job %s: Pi is roughly %v, more than 0.01 away from π", job, pi)
	}
	var own int
	for _, p := range execs.Pods() {
		if p.Labels[vocab.LabelAppID] != appID {
			continue
		}
		own++
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != pod.UID {
			t.Errorf("executor %s of %s is owned by %+v, want the driver pod %s alone", p.Name, appID, p.OwnerReferences, pod.Name)
		}
	}
	if own != 2 {
		t.Errorf("Job %s: %d executor pods with app id %s, want 2", job, own, appID)
	}
	waitClean(t, ns, appID, 30*time.Second)
	return appID
}

// jobPod returns the Job's one pod.
func jobPod(t *testing.T, ns, job string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1", job, len(pods.Items))
	}
	return &pods.Items[0]
}

func jobCondition(j *batchv1.Job, c batchv1.JobConditionType) bool {
	if j == nil {
		return false
	}
	for _, cond := range j.Status.Conditions {
		if cond.Type == c && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// deleteJobs deletes the namespace's Jobs and CronJobs with their pods.
func deleteJobs(t *testing.T, ns string) {
	t.Helper()
	kubectl(t, nil, "delete", "cronjobs,jobs", "--all", "-n", ns, "--cascade=background", "--wait=false")
}
