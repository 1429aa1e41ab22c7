package node

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// checkEnded checks that the ended driver pod done says it ended as class,
// saying want: in a Warning Event (Normal for Succeeded), and with the
// Event's message in its annotation sparklet.io/ended and its condition
// sparklet.io/<class>. It returns the Event's message.
func checkEnded(ctx context.Context, t *testing.T, done *corev1.Pod, class, want string) string {
	t.Helper()
	ev := podEvent(ctx, t, done.Namespace, done.Name, class)
	wantType := corev1.EventTypeWarning
	if class == vocab.EndSucceeded {
		wantType = corev1.EventTypeNormal
	}
	if ev.Type != wantType || !strings.Contains(ev.Message, want) {
		t.Errorf("Event %s: %s %q, want a %s saying %q", class, ev.Type, ev.Message, wantType, want)
	}
	if ann := done.Annotations[vocab.AnnotationEnded]; ann != class+": "+ev.Message {
		t.Errorf("%s = %q, want %q", vocab.AnnotationEnded, ann, class+": "+ev.Message)
	}
	i := slices.IndexFunc(done.Status.Conditions, func(c corev1.PodCondition) bool { return string(c.Type) == vocab.ConditionPrefix+class })
	if i < 0 || done.Status.Conditions[i].Status != corev1.ConditionTrue || done.Status.Conditions[i].Message != ev.Message {
		t.Errorf("conditions %+v, want %s True saying %q", done.Status.Conditions, vocab.ConditionPrefix+class, ev.Message)
	}
	return ev.Message
}
