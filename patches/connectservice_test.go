package patches

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestConnectServerName(t *testing.T) {
	yes := true
	owned := func(kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}}}
	}
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"a Deployment's pod", owned("ReplicaSet", "spark-connect-5d8f7c9b4", map[string]string{podTemplateHash: "5d8f7c9b4"}), "spark-connect"},
		{"a bare ReplicaSet's pod", owned("ReplicaSet", "spark-connect", nil), "spark-connect"},
		{"a StatefulSet's pod", owned("StatefulSet", "connect", map[string]string{podTemplateHash: "x"}), "connect"},
		{"a named pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "server"}}, "server"},
		{"a pod named by the API server", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "server-"}}, "server"},
		{"a name too long for a label", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}}, strings.Repeat("a", 62)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConnectServerName(tc.pod); got != tc.want {
				t.Errorf("ConnectServerName = %q, want %q", got, tc.want)
			}
		})
	}
}

// A Connect server behind the sidecar is labelled with its server's name;
// the connect-service annotation takes "true" or "false", and "true" only
// where the sidecar stands in front of a Connect server.
func TestConnectServiceAnnotation(t *testing.T) {
	server := func(image, service string) *corev1.Pod {
		return driverPod(func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = []string{"driver", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
				"--jars", "local:///opt/jars/spark-connect_2.12-3.5.9.jar"}
			if service != "" {
				p.Annotations = map[string]string{vocab.AnnotationConnectService: service}
			}
		})
	}
	pol := mustPolicy(t, "")
	pod := server("apache/spark:4.3.0", "true")
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Labels[vocab.LabelConnectServer], ConnectServerName(pod); got != want || got == "" {
		t.Errorf("label %s = %q, want %q", vocab.LabelConnectServer, got, want)
	}
	plain := driverPod()
	if _, err := inject(t, plain, pol); err != nil {
		t.Fatal(err)
	}
	if v, ok := plain.Labels[vocab.LabelConnectServer]; ok {
		t.Errorf("a plain driver got label %s=%q", vocab.LabelConnectServer, v)
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		says string
	}{
		{"neither true nor false", server("apache/spark:4.3.0", "yes"), `"yes" is neither "true" nor "false"`},
		{"not a Connect server", driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationConnectService: "true"}
		}), "the pod runs no Spark Connect server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inject(t, tc.pod, pol)
			var refused *Refused
			if !errors.As(err, &refused) || refused.Reason != "bad-connect-service" || !strings.Contains(err.Error(), tc.says) ||
				!strings.Contains(err.Error(), vocab.AnnotationConnectService) {
				t.Errorf("err = %v, want a refusal naming %s and saying %q", err, vocab.AnnotationConnectService, tc.says)
			}
		})
	}
	old := server("apache/spark:3.5.9", "true")
	if _, err := inject(t, old, pol); err != nil {
		t.Errorf("a 3.5 server, behind the sidecar too: %v", err)
	} else if old.Labels[vocab.LabelConnectServer] == "" {
		t.Errorf("a 3.5 server has no label %s", vocab.LabelConnectServer)
	}
}
