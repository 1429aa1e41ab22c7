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
// Spark 4.0.5 (sized for the node, nodeSized) and runs it now, as its
// comment tells users to, `kubectl create job --from=cronjob/...`, checked
// as a Job's run is (jobRun.check). The CronJob is suspended, so that its
// schedule cannot add a run of its own meanwhile. Two overlapping runs are
// e2e/realspark's TestSparkPiCronJob.
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
	const run = "spark-pi-now"
	kubectl(ctx, t, "-n", ns, "create", "job", run, "--from=cronjob/"+cronJob)
	t.Cleanup(func() { deleteJob(ns, run) })
	followJob(ctx, t, ns, run).check(ctx, t)
	t.Logf("a SparkPi CronJob run on the real node: kubectl apply to complete and clean in %s", time.Since(start).Round(100*time.Millisecond))
}
