package patches

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// pickAppID keeps a valid spark-app-selector label (so reinvocation and
// re-injection keep the id) or generates one.
func pickAppID(pod *corev1.Pod, p *plan) error {
	id := pod.Labels[LabelAppID]
	if id != "" {
		if msgs := validation.IsValidLabelValue(id); len(msgs) > 0 {
			return &Refused{Reason: "bad-app-id", Message: fmt.Sprintf(
				"label %s=%q is not a valid label value: %s", LabelAppID, id, strings.Join(msgs, "; "))}
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

// labelAppID labels the pod with its application id, which Spark's
// executors carry too.
func labelAppID(pod *corev1.Pod, p *plan, _ *Status) error {
	pod.Labels[LabelAppID] = p.appID
	return nil
}
