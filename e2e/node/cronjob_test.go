package node

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/test/fixtures"
)

// sparkPiCronJob applies examples/spark-pi-cronjob.yaml with the image of
// Spark 4.0.5 (sized for the node, nodeSized) and runs it now twice, as its comment tells users to,
// `kubectl create job --from=cronjob/...`: the two runs overlap, and each is
// an application of its own, with its own id and executors, checked as a
// Job's run is (jobRun.check). The CronJob is suspended, so that its
// schedule cannot add a run of its own meanwhile.
func sparkPiCronJob(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	suspended, cronJob := fixtures.Suspended(t, fixtures.ExampleFor(t, "../../examples/spark-pi-cronjob.yaml", "4.0.5", "2.13"))
	var example batchv1.CronJob
	if err := yaml.UnmarshalStrict(suspended, &example); err != nil {
		t.Fatal(err)
	}
	nodeSized(&example.Spec.JobTemplate.Spec.Template)
	manifest, err := yaml.Marshal(&example)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(string(manifest)))
	t.Cleanup(func() {
		_ = cp.Client().BatchV1().CronJobs(ns).Delete(context.Background(), cronJob, metav1.DeleteOptions{})
	})
	var runs []*jobRun
	for _, run := range []string{"spark-pi-now-1", "spark-pi-now-2"} {
		kubectl(ctx, t, "-n", ns, "create", "job", run, "--from=cronjob/"+cronJob)
		t.Cleanup(func() { deleteJob(ns, run) })
	}
	for _, run := range []string{"spark-pi-now-1", "spark-pi-now-2"} {
		runs = append(runs, followJob(ctx, t, ns, run))
	}
	if runs[0].appID == runs[1].appID {
		t.Errorf("runs %s and %s share the application id %s", runs[0].job, runs[1].job, runs[0].appID)
	}
	for _, r := range runs {
		r.check(ctx, t)
	}
	t.Logf("two SparkPi CronJob runs on the real node: kubectl apply to both complete and clean in %s", time.Since(start).Round(100*time.Millisecond))
}
