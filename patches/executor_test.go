package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

func executorPod(mod ...func(*corev1.Pod)) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "pi-exec-1",
			Labels: map[string]string{vocab.LabelRole: "executor", vocab.LabelAppID: "spark-test", vocab.LabelExecID: "1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: "pi", UID: "driver-uid", Controller: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "spark-kubernetes-executor", Image: "apache/spark:3.5.4",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1408Mi"),
				}},
			}},
		},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func executorInput(t *testing.T) ExecutorInput {
	driver := driverPod()
	driver.UID = "driver-uid"
	return ExecutorInput{Policy: mustPolicy(t, testPolicy), Driver: ReadDriver(driver), AppID: "spark-test"}
}

func TestExecutorPatched(t *testing.T) {
	pod := executorPod()
	if _, err := Executor(pod, executorInput(t)); err != nil {
		t.Fatal(err)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "driver-uid" || !*pod.OwnerReferences[0].Controller {
		t.Errorf("owner references = %+v, want one controller reference to the driver", pod.OwnerReferences)
	} else if pod.OwnerReferences[0].BlockOwnerDeletion != nil {
		t.Errorf("owner reference sets blockOwnerDeletion, which OwnerReferencesPermissionEnforcement refuses without pods/finalizers: %+v", pod.OwnerReferences[0])
	}
	if pod.Labels[vocab.LabelManaged] != "true" {
		t.Errorf("labels = %v", pod.Labels)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "spot" {
		t.Errorf("enforced toleration missing: %+v", pod.Spec.Tolerations)
	}
	c := pod.Spec.Containers[0]
	if !hasEnv(c.Env, "AWS_ACCESS_KEY_ID") || !hasMount(c.VolumeMounts, VolumeCredPfx+"s3") {
		t.Errorf("credential not given to the executor: env %v mounts %v", c.Env, c.VolumeMounts)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("executors must not get a service-account token")
	}
	again := pod.DeepCopy()
	if _, err := Executor(again, executorInput(t)); err != nil {
		t.Fatal(err)
	}
	if len(again.Spec.Volumes) != len(pod.Spec.Volumes) || len(again.Spec.Containers[0].Env) != len(c.Env) || len(again.OwnerReferences) != 1 {
		t.Error("patching an executor twice added things twice")
	}
}

func TestExecutorRefusals(t *testing.T) {
	yes := true
	cases := []struct {
		name, reason string
		pod          *corev1.Pod
	}{
		{"other app", "other-app", executorPod(func(p *corev1.Pod) { p.Labels[vocab.LabelAppID] = "spark-other" })},
		{"not executor", "not-executor", executorPod(func(p *corev1.Pod) { p.Labels[vocab.LabelRole] = "driver" })},
		{"privileged", "privileged", executorPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		})},
		{"host path", "host-path", executorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		})},
		{"host network", "host-namespace", executorPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{"image", "image-not-allowed", executorPod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" })},
		{"too big", "over-limit", executorPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Executor(tc.pod, executorInput(t))
			var r *Refused
			if !errors.As(err, &r) || r.Reason != tc.reason {
				t.Fatalf("err = %v, want refusal %s", err, tc.reason)
			}
			if !strings.Contains(r.Message, tc.pod.Name) {
				t.Errorf("message %q does not name the pod", r.Message)
			}
		})
	}
}

func TestExecutorHostPathAllowed(t *testing.T) {
	in := executorInput(t)
	yes := true
	in.Policy.Executor.Defaults.AllowHostPath = &yes
	pod := executorPod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}}
	})
	if _, err := Executor(pod, in); err != nil {
		t.Fatal(err)
	}
	// Not over the kubelet's pod directory or the node's /proc, though.
	for _, path := range []string{"/", "/var/lib/kubelet", "/var/lib/kubelet/pods/x/volumes", "/proc", "/proc/1/root"} {
		pod := executorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
		})
		_, err := Executor(pod, in)
		var r *Refused
		if !errors.As(err, &r) || r.Reason != "host-path" || !strings.Contains(r.Message, "never allows it") {
			t.Errorf("hostPath %s with allowHostPath: err %v, want a host-path refusal", path, err)
		}
	}
}

// TestExecutorNeverOnTheDriverAccount: every route by which an executor
// pod could name the driver's ServiceAccount ends in a refusal, the
// policy's enforced Spark key included.
func TestExecutorNeverOnTheDriverAccount(t *testing.T) {
	for name, tc := range map[string]struct {
		pod    func(*corev1.Pod)
		in     func(*ExecutorInput)
		refuse bool
	}{
		"own account":       {pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "spark-executor" }},
		"namespace default": {},
		"template names it": {pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "spark-driver" }, refuse: true},
		"deprecated field":  {pod: func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "spark-driver" }, refuse: true},
		"enforced Spark key": {in: func(in *ExecutorInput) {
			in.Policy.Spark.Enforced = map[string]string{confExecutorServiceAccount: "spark-driver"}
		}, refuse: true},
		"driver runs as default": {in: func(in *ExecutorInput) { in.Driver.Pod.Spec.ServiceAccountName = "" }, refuse: true},
	} {
		t.Run(name, func(t *testing.T) {
			pod, in := executorPod(), executorInput(t)
			if tc.pod != nil {
				tc.pod(pod)
			}
			if tc.in != nil {
				tc.in(&in)
			}
			_, err := Executor(pod, in)
			var r *Refused
			if refused := errors.As(err, &r) && r.Reason == "driver-service-account"; refused != tc.refuse {
				t.Errorf("err = %v, want a driver-service-account refusal: %v", err, tc.refuse)
			}
		})
	}
}
