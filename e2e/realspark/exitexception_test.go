package realspark

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// TestExitException runs SparkPi with a number of slices that is not a
// number: its main method throws before any SparkContext exists, and
// SparkSubmit (4.1+, spark.kubernetes.driver.annotateExitException, which
// the webhook turns on there) writes the exception on the driver pod
// through the sidecar. In the namespace whose policy enforces the key off
// (testdata/policy.yaml), the pod fails without it.
func TestExitException(t *testing.T) {
	for _, d := range distsFrom(t, 4, 1) {
		for _, tc := range []struct {
			name      string
			annotated bool
		}{{"on-by-default", true}, {"policy-off", false}} {
			t.Run(tc.name+"/"+d.Version, func(t *testing.T) { exitException(t, d, tc.annotated) })
		}
	}
}

func exitException(t *testing.T, d spark.Dist, annotated bool) {
	ns := namespace(t)
	pod := strings.Replace(string(example(t, "spark-pi-pod.yaml", d)), `- "100"`, `- "not-a-number"`, 1)
	if !strings.Contains(pod, "not-a-number") {
		t.Fatal("examples/spark-pi-pod.yaml no longer ends its args with \"100\"")
	}
	kubectl(t, []byte(pod), "apply", "-n", ns, "-f", "-")
	done := waitPod(t, ns, "spark-pi", "finished", 3*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
	if done.Status.Phase != corev1.PodFailed {
		t.Fatalf("driver pod %s, want Failed\n%s", done.Status.Phase, driverLogTail(ns, "spark-pi"))
	}
	if !strings.Contains(log(ns, "spark-pi", "spark"), `NumberFormatException: For input string: "not-a-number"`) {
		t.Fatalf("the driver did not fail on its argument\n%s", driverLogTail(ns, "spark-pi"))
	}
	got, ok := done.Annotations[vocab.AnnotationExitException]
	switch {
	case annotated && !ok:
		t.Fatalf("the failed driver pod has no %s annotation: %v\n%s", vocab.AnnotationExitException, done.Annotations, driverLogTail(ns, "spark-pi"))
	case annotated:
		for _, want := range []string{`java.lang.NumberFormatException: For input string: "not-a-number"`, "org.apache.spark.examples.SparkPi.main"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s does not say %q:\n%s", vocab.AnnotationExitException, want, got)
			}
		}
		t.Logf("Spark %s: %s (%d bytes) begins %q", d.Version, vocab.AnnotationExitException, len(got), strings.SplitN(got, "\n", 2)[0])
	case ok:
		t.Errorf("the policy turns %s off, yet the pod has %s=%q", patches.KeyAnnotateExitException, vocab.AnnotationExitException, got)
	}
}

// distsFrom returns the pinned versions of line major.minor and later.
func distsFrom(t *testing.T, major, minor int) []spark.Dist {
	t.Helper()
	var out []spark.Dist
	for _, d := range dists {
		if d.Major > major || d.Major == major && d.Minor >= minor {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no pinned Spark version of %d.%d or later", major, minor)
	}
	return out
}
