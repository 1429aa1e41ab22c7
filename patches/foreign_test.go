package patches

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestLaunchedElsewhere(t *testing.T) {
	submitted := func(p *corev1.Pod) {
		p.Labels[vocab.LabelAppID] = "spark-0123"
		p.Spec.Containers[0].Args = []string{"driver", "--properties-file", "/opt/spark/conf/spark.properties", "--class", "Main", "local:///app.jar"}
	}
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		reason string
	}{
		"spark-operator label": {driverPod(func(p *corev1.Pod) { p.Labels[LabelSparkOperator] = "true" }), SkipLaunchedBySparkOperator},
		"spark-submit args":    {driverPod(submitted), SkipSparkSubmitClusterMode},
		"spark-submit conf volume": {driverPod(func(p *corev1.Pod) {
			p.Labels[vocab.LabelAppID] = "spark-0123"
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: sparkSubmitConfVolume})
		}), SkipSparkSubmitClusterMode},
		// An app id alone is what an injected pod or a user's pod may carry.
		"app id only":          {driverPod(func(p *corev1.Pod) { p.Labels[vocab.LabelAppID] = "spark-0123" }), ""},
		"args without app id":  {driverPod(func(p *corev1.Pod) { submitted(p); delete(p.Labels, vocab.LabelAppID) }), ""},
		"properties elsewhere": {driverPod(func(p *corev1.Pod) { submitted(p); p.Spec.Containers[0].Args[2] = "/etc/my.properties" }), ""},
		"operator label false": {driverPod(func(p *corev1.Pod) { p.Labels[LabelSparkOperator] = "false" }), ""},
		"injected by sparklet": {driverPod(func(p *corev1.Pod) { submitted(p); p.Annotations = map[string]string{vocab.AnnotationStatus: "{}"} }), ""},
	} {
		got := ""
		if s := launchedElsewhere(tc.pod); s != nil {
			got = s.Reason
		}
		if got != tc.reason {
			t.Errorf("%s: reason %q, want %q", name, got, tc.reason)
		}
	}
}

// TestTokenContainersKeepTheToken injects an Argo-shaped pod twice: wait
// keeps the API server's token volume, main (the Spark container) and the
// others lose it, and the second injection changes nothing.
func TestTokenContainersKeepTheToken(t *testing.T) {
	pol := mustPolicy(t, testPolicy+"\ntokenContainers: [wait, main]\n")
	token := corev1.VolumeMount{Name: "kube-api-access-x", MountPath: ServiceAccount}
	pod := driverPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{vocab.AnnotationContainer: "main"}
		p.Spec.Containers[0].Name = "main"
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{token}
		p.Spec.Containers = append(p.Spec.Containers,
			corev1.Container{Name: "wait", Image: "argoexec", VolumeMounts: []corev1.VolumeMount{token}},
			corev1.Container{Name: "log", Image: "busybox", VolumeMounts: []corev1.VolumeMount{token}})
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: token.Name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	})
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 {
		t.Errorf("warnings = %q, want one about main", res.Warnings)
	}
	for _, c := range pod.Spec.Containers {
		if got, want := mountsVolume(c.VolumeMounts, token.Name), c.Name == "wait"; got != want {
			t.Errorf("container %s mounts the token: %v, want %v", c.Name, got, want)
		}
	}
	if !hasVolume(pod, token.Name) {
		t.Error("the token volume wait keeps was removed")
	}
	again := pod.DeepCopy()
	if _, err := Driver(again, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pod, again) {
		t.Error("a second injection changed the pod")
	}
}
