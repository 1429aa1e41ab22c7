package patches

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sparklet/sparklet/vocab"
)

// podTemplateHash is the label the Deployment controller puts on a
// ReplicaSet's pods; the ReplicaSet is named "<deployment>-<hash>"
// (pkg/controller/deployment/sync.go, kubernetes v1.37).
const podTemplateHash = "pod-template-hash"

// checkConnectService refuses a sparklet.io/connect-service annotation
// that is neither "true" nor "false", and a Service asked for where the
// sidecar does not stand in front of a Connect server.
func checkConnectService(pod *corev1.Pod, p *plan) error {
	v, ok := pod.Annotations[vocab.AnnotationConnectService]
	if !ok {
		return nil
	}
	switch strings.ToLower(v) {
	case "false":
		return nil
	case "true":
	default:
		return &Refused{Reason: "bad-connect-service", Message: fmt.Sprintf("annotation %s: %q is neither \"true\" nor \"false\"", vocab.AnnotationConnectService, v)}
	}
	if p.connectAuth {
		return nil
	}
	return &Refused{Reason: "bad-connect-service", Message: fmt.Sprintf(
		"annotation %s: \"true\" asks for a Service in front of the sparklet sidecar's Spark Connect port, but the pod runs no Spark Connect server; remove the annotation (docs/connect.md)",
		vocab.AnnotationConnectService)}
}

// labelConnectServer labels a Connect server's pod with the name of the
// server it is one pod of, which its Service selects. A workload's
// template rendered offline is labelled when its pods are admitted.
func labelConnectServer(pod *corev1.Pod, p *plan, _ *Status) error {
	if !p.connectAuth || p.in.Template {
		return nil
	}
	pod.Labels[vocab.LabelConnectServer] = ConnectServerName(pod)
	return nil
}

// ConnectServerName names the server a pod is one of: its Deployment
// (from its ReplicaSet's name, less the pod-template-hash), else its
// controller (a StatefulSet, say), else the pod itself; cut to a label
// value's 63 characters.
func ConnectServerName(pod *corev1.Pod) string {
	name := cmp.Or(pod.Name, strings.TrimRight(pod.GenerateName, "-"))
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
		name = owner.Name
		if hash := pod.Labels[podTemplateHash]; owner.Kind == "ReplicaSet" && hash != "" {
			name = strings.TrimSuffix(name, "-"+hash)
		}
	}
	if len(name) > validation.LabelValueMaxLength {
		name = name[:validation.LabelValueMaxLength]
	}
	return strings.TrimRight(name, "-.")
}
