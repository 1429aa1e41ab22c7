package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestDriverAccountNeverLent walks Spark's routes to an executor's
// ServiceAccount at admission: the executor key, the driver key Spark
// falls back on, and default when neither is set; against the account the
// driver runs as after the policy.
func TestDriverAccountNeverLent(t *testing.T) {
	withConf := func(conf string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationSparkConf: conf} }
	}
	runsAs := func(sa string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.ServiceAccountName = sa } }
	for _, tc := range []struct {
		name   string
		policy string
		pod    []func(*corev1.Pod)
		refuse string // a part of the refusal; "" for admitted
		warn   string // a part of a warning
	}{
		{name: "own account, executors on default"},
		{name: "executor key names the driver's", pod: []func(*corev1.Pod){withConf(confExecutorServiceAccount + " spark-driver")},
			refuse: "from " + confExecutorServiceAccount},
		{name: "driver key, Spark's fallback", pod: []func(*corev1.Pod){withConf(confDriverServiceAccount + " spark-driver")},
			refuse: "Spark's fallback"},
		{name: "executor key wins over the driver key",
			pod: []func(*corev1.Pod){withConf(confExecutorServiceAccount + " spark-executor\n" + confDriverServiceAccount + " spark-driver")}},
		{name: "an empty executor key names no account",
			pod: []func(*corev1.Pod){withConf(confExecutorServiceAccount + " \n" + confDriverServiceAccount + " spark-driver")}},
		{name: "an empty executor key on a default driver", pod: []func(*corev1.Pod){runsAs("default"), withConf(confExecutorServiceAccount + " ")},
			refuse: `ServiceAccount "default", from ` + confExecutorServiceAccount},
		{name: "default driver, no keys", pod: []func(*corev1.Pod){runsAs("")}, refuse: "neither"},
		{name: "default driver, the policy's account", policy: "driver:\n  defaults: {serviceAccountName: spark-driver}\n",
			pod: []func(*corev1.Pod){runsAs("default")}},
		{name: "policy enforces the driver's, executor key names it", policy: "driver:\n  enforced: {serviceAccountName: etl}\n",
			pod: []func(*corev1.Pod){withConf(confExecutorServiceAccount + " etl")}, refuse: `"etl"`},
		{name: "default driver, executor template decides",
			pod:  []func(*corev1.Pod){runsAs("default"), withConf(confExecutorPodTemplate + " /opt/t.yaml")},
			warn: "unless pod template /opt/t.yaml names another"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Driver(driverPod(tc.pod...), Input{Namespace: "spark-jobs", Policy: mustPolicy(t, tc.policy), Version: "test", AppID: "spark-test"})
			var r *Refused
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refuse != "" && (!errors.As(err, &r) || r.Reason != "driver-service-account" || !strings.Contains(r.Message, tc.refuse)):
				t.Fatalf("err = %v, want a driver-service-account refusal saying %q", err, tc.refuse)
			}
			warned := strings.Join(res.Warnings, "\n")
			if (tc.warn == "") != !strings.Contains(warned, "ServiceAccount") || tc.warn != "" && !strings.Contains(warned, tc.warn) {
				t.Errorf("warnings %q, want one saying %q", res.Warnings, tc.warn)
			}
		})
	}
}
