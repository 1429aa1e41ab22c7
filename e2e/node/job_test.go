package node

import (
	"context"
	"math"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/fixtures"
	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/test/sparklog"
	"github.com/sparklet/sparklet/vocab"
)

// sparkPiJob applies examples/spark-pi-job.yaml with the image of Spark
// 4.3.0 (sized for the node, nodeSized): the Job controller creates the
// driver pod from a template with only generateName, the real kubelet
// starts the native sidecar before the JVM and ends it after, so the pod
// and the Job complete (jobRun.check).
func sparkPiJob(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	const job = "spark-pi-job"
	var example batchv1.Job
	if err := yaml.UnmarshalStrict(fixtures.ExampleFor(t, "../../examples/spark-pi-job.yaml", "4.3.0", "2.13"), &example); err != nil {
		t.Fatal(err)
	}
	nodeSized(&example.Spec.Template)
	manifest, err := yaml.Marshal(&example)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(string(manifest)))
	t.Cleanup(func() { deleteJob(ns, job) })
	followJob(ctx, t, ns, job).check(ctx, t)
	t.Logf("SparkPi Job on the real node: kubectl apply to complete and clean in %s", time.Since(start).Round(100*time.Millisecond))
}

// nodeSized gives an example's driver the requests of the node's other
// drivers (sparkPiTemplate) and its executors a tenth of a core: the node
// has two cores, and a container without requests gets the least CPU
// share there, behind its own executors.
func nodeSized(tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	tmpl.Annotations[vocab.AnnotationSparkConf] += smallExecutors
}

// jobRun is a Job's one driver pod, its executors followed.
type jobRun struct {
	job   string
	pod   *corev1.Pod
	appID string
	execs *executors.Tracker
}

// followJob waits for the Job's one pod, checks that it was injected with
// only generateName to go by, and follows its executors.
func followJob(ctx context.Context, t *testing.T, ns, job string) *jobRun {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil {
			return false, nil
		}
		pods = l.Items
		return len(pods) > 0, nil
	})
	if err != nil || len(pods) != 1 {
		t.Fatalf("the Job %s's pods: %d, %v; want one", job, len(pods), err)
	}
	p := &pods[0]
	appID := p.Labels[vocab.LabelAppID]
	if appID == "" {
		t.Fatalf("the Job %s's pod %s has no %s label: not injected", job, p.Name, vocab.LabelAppID)
	}
	if p.GenerateName == "" {
		t.Errorf("the Job %s's pod %s has no generateName", job, p.Name)
	}
	return &jobRun{job: job, pod: p, appID: appID, execs: executors.Track(t, cp.Client(), ns, vocab.LabelAppID+"="+appID)}
}

// check waits for the Job to complete and checks its run: the pod
// Succeeded on the real node with SparkPi's result within 0.01 of π, its
// sidecar ended once and never restarted, its two executors owned by it
// alone, and nothing of the application left.
func (r *jobRun) check(ctx context.Context, t *testing.T) {
	t.Helper()
	ns := r.pod.Namespace
	kubectl(ctx, t, "-n", ns, "wait", "--for=condition=Complete", "job/"+r.job, "--timeout=4m")
	p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, r.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName != node.Name {
		t.Errorf("the Job %s's pod %s: %s on %q, want Succeeded on the real node", r.job, p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == patches.SidecarName && (s.State.Terminated == nil || s.RestartCount != 0) {
			t.Errorf("sidecar of the Job %s's completed pod: %+v, want terminated once the driver ended, never restarted", r.job, s.State)
		}
	}
	logs := podLogs(ctx, t, ns, p.Name, "spark")
	if pi, ok := sparklog.Pi(logs); !ok || math.Abs(pi-math.Pi) > 0.01 {
		t.Errorf("the Job %s's driver log has no result within 0.01 of π (found %v: %v):\n%s", r.job, ok, pi, tail(logs, 40))
	}
	own := r.execs.Pods()
	for _, e := range own {
		if len(e.OwnerReferences) != 1 || e.OwnerReferences[0].UID != p.UID {
			t.Errorf("executor %s is owned by %+v, want the driver pod %s alone", e.Name, e.OwnerReferences, p.Name)
		}
	}
	if len(own) != 2 {
		t.Errorf("the Job %s: %d executor pods of %s, want 2", r.job, len(own), r.appID)
	}
	executors.WaitClean(t, cp.Client(), ns, r.appID, time.Minute)
}

// deleteJob deletes the Job and its pods, for a cleanup.
func deleteJob(ns, job string) {
	_ = cp.Client().BatchV1().Jobs(ns).Delete(context.Background(), job, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
}
