package patches

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sparklet/sparklet/vocab"
)

// pickAppID keeps a valid spark-app-selector label (so reinvocation and
// re-injection keep the id) or generates one. A pod a controller created
// from a template (a Job's, a CronJob's) keeps the label only when this
// webhook gave it to this pod, as the status annotation records: a label
// the template carried, whether the user wrote it or an older
// `sparklet inject` rendered it, would give every pod of the template the
// same application, and their executors would mix. A template rendered
// offline (Input.Template) gets no id at all; each pod gets its own here.
func pickAppID(pod *corev1.Pod, p *plan) error {
	if p.in.Template {
		return nil
	}
	id := pod.Labels[vocab.LabelAppID]
	if id != "" && fromTemplate(pod) && recordedAppID(pod) != id {
		id = ""
	}
	if id != "" {
		if msgs := validation.IsValidLabelValue(id); len(msgs) > 0 {
			return &Refused{Reason: "bad-app-id", Message: fmt.Sprintf(
				"label %s=%q is not a valid label value: %s", vocab.LabelAppID, id, strings.Join(msgs, "; "))}
		}
	} else if p.in.AppID != "" {
		id = p.in.AppID
	} else {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("generate app id: %w", err)
		}
		id = "spark-" + hex.EncodeToString(b)
	}
	p.appID = id
	return nil
}

// fromTemplate tells a pod a controller created from its template.
func fromTemplate(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind != "Pod"
}

// recordedAppID is the application id the status annotation records.
func recordedAppID(pod *corev1.Pod) string {
	var st Status
	if json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st) != nil {
		return ""
	}
	return st.AppID
}

// labelAppID labels the pod with its application id, which Spark's
// executors carry too.
func labelAppID(pod *corev1.Pod, p *plan, _ *Status) error {
	if p.appID == "" {
		delete(pod.Labels, vocab.LabelAppID)
		return nil
	}
	pod.Labels[vocab.LabelAppID] = p.appID
	return nil
}
