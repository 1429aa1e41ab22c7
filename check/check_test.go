package check

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

func hookConfig() *admissionv1.MutatingWebhookConfiguration {
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sparklet"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:           WebhookName,
			Rules:          []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{Resources: []string{"pods"}}}},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{vocab.LabelRole: "driver"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"sparklet.io/inject": "enabled"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}},
		}},
	}
}

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func sa(namespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver", Namespace: namespace}}
}

func options(t *testing.T, objs ...runtime.Object) Options {
	t.Helper()
	p, err := policy.Parse([]byte("driver: {defaults: {serviceAccountName: spark-driver}}\nnamespaces: {team-a: {limits: {maxExecutors: 3}}}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Client: fake.NewClientset(objs...), Policy: p, PolicySource: "policy.yaml", Version: "test", Events: 2}
}

func TestNamespace(t *testing.T) {
	optedIn := map[string]string{"sparklet.io/inject": "enabled", "kubernetes.io/metadata.name": "team-a"}
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		opts   func(*Options)
		ok     bool
		want   []string
		absent []string
	}{
		{
			name: "opted in, with its own section and the ServiceAccount",
			objs: []runtime.Object{hookConfig(), ns("team-a", optedIn), sa("team-a")}, ok: true,
			want: []string{"namespace/team-a: pods labelled spark-role=driver will be injected",
				"webhook sparklet (pods.sparklet.io): namespace matches its namespaceSelector",
				"policy: policy.yaml; its namespaces.team-a section applies", "driver ServiceAccount spark-driver: present"},
		},
		{
			name: "no label",
			objs: []runtime.Object{hookConfig(), ns("team-a", nil)},
			want: []string{"namespace/team-a: pods will NOT be injected",
				"does not match its namespaceSelector: wants sparklet.io/inject=enabled, has no sparklet.io/inject label",
				"to opt in: kubectl label namespace team-a sparklet.io/inject=enabled",
				"driver ServiceAccount spark-driver: missing in team-a"},
		},
		{
			name: "a wrong label value and an excluded name",
			objs: []runtime.Object{hookConfig(), ns("kube-system", map[string]string{"sparklet.io/inject": "yes", "kubernetes.io/metadata.name": "kube-system"})},
			want: []string{"wants sparklet.io/inject=enabled, has sparklet.io/inject=yes",
				"wants kubernetes.io/metadata.name notin (kube-system), has kubernetes.io/metadata.name=kube-system"},
		},
		{
			name: "no webhook installed",
			objs: []runtime.Object{ns("team-a", optedIn), sa("team-a")},
			want: []string{"pods will NOT be injected", "no sparklet webhook is registered"},
		},
		{
			name: "no policy",
			objs: []runtime.Object{hookConfig(), ns("team-a", optedIn)}, ok: true,
			opts: func(o *Options) { o.Policy, o.PolicyError = nil, context.DeadlineExceeded },
			want: []string{"policy: not read: context deadline exceeded"}, absent: []string{"ServiceAccount"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, tc.objs...)
			if tc.opts != nil {
				tc.opts(&o)
			}
			var out strings.Builder
			name := "team-a"
			if strings.Contains(tc.name, "excluded") {
				name = "kube-system"
			}
			ok, err := Namespace(context.Background(), &out, o, name)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Errorf("would inject %v, want %v", ok, tc.ok)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out.String(), a) {
					t.Errorf("output has %q:\n%s", a, out.String())
				}
			}
		})
	}
}

func driverPod(name string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID("uid-" + name), Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:3.5.4",
			Args: []string{"driver", "--conf", "spark.executor.instances=5", "local:///opt/spark/examples/jars/spark-examples.jar"}}}},
	}
}

func executor(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a",
		Labels: map[string]string{vocab.LabelAppID: "spark-1", vocab.LabelRole: "executor"}}, Status: corev1.PodStatus{Phase: phase}}
}

func TestPod(t *testing.T) {
	optedIn := ns("team-a", map[string]string{"sparklet.io/inject": "enabled"})
	started := metav1.NewTime(time.Now().Add(-3 * time.Minute))
	injected := driverPod("pi", map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: "spark-1"},
		map[string]string{vocab.AnnotationStatus: `{"version":"0.1.0","appID":"spark-1","sparkContainer":"spark"}`,
			vocab.AnnotationEnded:      "UserError: the application failed (exit code 1): java.lang.IllegalStateException: boom",
			vocab.AnnotationUIURL:      "http://pi-ui.team-a.svc:4040",
			vocab.AnnotationHistoryURL: "https://history.example.com/history/spark-1/jobs/"})
	injected.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: patches.SidecarName, Ready: true, RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "spark", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, Message: "OOM\n"}}}}}
	event := func(name, reason string, ago time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}, Reason: reason, Type: "Normal", Message: reason + " happened",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "pi", Namespace: "team-a", UID: "uid-pi"},
			Source:         corev1.EventSource{Component: "sparklet-sidecar"}, LastTimestamp: metav1.NewTime(time.Now().Add(-ago))}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		more []runtime.Object
		ok   bool
		want []string
	}{
		{
			name: "a running driver", pod: injected, ok: true,
			more: []runtime.Object{executor("e1", corev1.PodRunning), executor("e2", corev1.PodRunning), executor("e3", corev1.PodPending), executor("e4", corev1.PodFailed),
				event("old", "Oldest", time.Hour), event("mid", "Middle", time.Minute), event("new", "Newest", time.Second)},
			want: []string{"pod/pi: injected by sparklet 0.1.0, application spark-1, Spark container spark",
				"  phase: Running\n", "  sidecar sparklet-sidecar: running for 3m", ", ready, 1 restarts",
				"  spark container spark: terminated: Error, exit code 1: OOM, not ready, 0 restarts\n",
				"  ended: UserError: the application failed (exit code 1): java.lang.IllegalStateException: boom\n",
				"  spark ui: http://pi-ui.team-a.svc:4040\n",
				"  history: https://history.example.com/history/spark-1/jobs/\n",
				"  executors: 4 (1 Pending, 2 Running, 1 Failed)",
				"  events (last 2):\n", "Normal  Middle  sparklet-sidecar: Middle happened\n", "Newest happened"},
		},
		{
			name: "a driver waiting for Kueue", ok: true, pod: func() *corev1.Pod {
				p := driverPod("pi", map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: "spark-1"},
					map[string]string{vocab.AnnotationStatus: `{"version":"0.1.0","appID":"spark-1","sparkContainer":"spark"}`,
						vocab.AnnotationScheduling: `{"scheduler":"kueue","queue":"team-a","driver":{"cpu":"1"},"executors":2,"executor":{"cpu":"1","memory":"1408Mi"}}`})
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
				p.Status.Phase = corev1.PodPending
				return p
			}(),
			want: []string{"  scheduling: kueue, LocalQueue team-a: the driver (cpu 1, memory 0) and each executor (cpu 1, memory 1408Mi) are admitted one by one; 2 executors at start\n",
				"  waiting for scheduling gate kueue.x-k8s.io/admission to be removed"},
		},
		{
			name: "not labelled", pod: driverPod("pi", map[string]string{"app": "x"}, nil),
			want: []string{"pod/pi: not injected", "the pod does not match its objectSelector: wants spark-role=driver, has no spark-role label",
				"sparklet skips it: not labelled spark-role=driver"},
		},
		{
			name: "opted out", pod: driverPod("pi", map[string]string{vocab.LabelRole: "driver"}, map[string]string{vocab.AnnotationInject: "false"}),
			want: []string{"the pod matches its objectSelector (spark-role=driver), so the webhook saw it at creation", "sparklet skips it: opted out"},
		},
		{
			name: "over the limit", pod: driverPod("pi", map[string]string{vocab.LabelRole: "driver"}, nil),
			want: []string{"sparklet would refuse it: ", "maxExecutors"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, append([]runtime.Object{hookConfig(), optedIn, tc.pod}, tc.more...)...)
			var out strings.Builder
			ok, err := Pod(context.Background(), &out, o, "team-a", "pi")
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Errorf("injected %v, want %v", ok, tc.ok)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
