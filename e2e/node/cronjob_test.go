package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/vocab"
)

// sparkPiCronJob applies examples/spark-pi-cronjob.yaml with the image of
// Spark 4.0.5 and runs it now as its comment tells users to, `kubectl
// create job --from=cronjob/...`; the run's Job completes, its pod's log
// has the result and no executor is left. The CronJob is suspended, so
// that its schedule cannot add a run of its own meanwhile.
func sparkPiCronJob(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	manifest, cronJob := fixtures.Suspended(t, fixtures.ExampleFor(t, "../../examples/spark-pi-cronjob.yaml", "4.0.5", "2.13"))
	const run = "spark-pi-now"
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(string(manifest)))
	t.Cleanup(func() {
		_ = cp.Client().BatchV1().CronJobs(ns).Delete(context.Background(), cronJob, metav1.DeleteOptions{})
		_ = cp.Client().BatchV1().Jobs(ns).Delete(context.Background(), run, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
	kubectl(ctx, t, "-n", ns, "create", "job", run, "--from=cronjob/"+cronJob)
	kubectl(ctx, t, "-n", ns, "wait", "--for=condition=Complete", "job/"+run, "--timeout=4m")
	t.Logf("SparkPi CronJob run on the real node: kubectl apply to Complete in %s", time.Since(start).Round(100*time.Millisecond))

	p := jobPod(ctx, t, ns, run)
	if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName != node.Name {
		t.Errorf("the run's pod %s: %s on %q, want Succeeded on the real node", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	if logs := podLogs(ctx, t, ns, p.Name, "spark"); !strings.Contains(logs, "Pi is roughly 3.1") {
		t.Errorf("driver log has no result:\n%s", tail(logs, 40))
	}
	waitExecutorsGone(ctx, t, ns, p.Labels[vocab.LabelAppID])
}
