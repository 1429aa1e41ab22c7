package patches

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// annotationPrefix is the prefix of the annotations sparklet owns.
const annotationPrefix = "sparklet.io/"

// knownAnnotations are the sparklet.io/ annotations a pod may carry, each
// with what it accepts. checkAnnotations refuses any other.
var knownAnnotations = map[string]string{
	vocab.AnnotationInject:             `"true" or "false"`,
	vocab.AnnotationContainer:          "the name of the Spark container",
	vocab.AnnotationSparkConf:          "Spark properties, one per line",
	vocab.AnnotationFetch:              "the remote dependencies, with their sha256",
	vocab.AnnotationEffectiveConf:      "written by sparklet",
	vocab.AnnotationStatus:             "written by sparklet",
	vocab.AnnotationUI:                 `"true" or "false" (a Service for the Spark UI)`,
	vocab.AnnotationUIURL:              "written by sparklet",
	vocab.AnnotationConnectService:     `"true" or "false" (a Service for a Spark Connect server)`,
	vocab.AnnotationConnectURL:         "written by sparklet",
	vocab.AnnotationConnectRouteURL:    "written by sparklet",
	vocab.AnnotationHistoryURL:         "written by sparklet",
	vocab.AnnotationEnded:              "written by sparklet",
	vocab.AnnotationBatchScheduler:     "yunikorn, kueue or none",
	vocab.AnnotationQueue:              "the batch scheduler's queue: a YuniKorn queue path or a Kueue LocalQueue",
	vocab.AnnotationPlaceholderTimeout: "how long YuniKorn keeps the gang's placeholders, such as 10m",
	vocab.AnnotationScheduling:         "written by sparklet",
}

// checkAnnotations refuses a sparklet.io/ annotation sparklet does not
// know, and a value it cannot take, so that a typo is never silently
// ignored. The Spark conf and fetch annotations are checked where they
// are read.
func checkAnnotations(pod *corev1.Pod) error {
	unknown := func(k, _ string) bool {
		_, known := knownAnnotations[k]
		return strings.HasPrefix(k, annotationPrefix) && !known
	}
	for _, k := range sortedWhere(pod.Annotations, unknown) {
		return &Refused{Reason: "unknown-annotation", Message: fmt.Sprintf(
			"annotation %s is not a sparklet annotation; the known ones are %s; fix or remove it",
			k, strings.Join(sortedKeys(knownAnnotations), ", "))}
	}
	if v, ok := pod.Annotations[vocab.AnnotationInject]; ok && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
		return &Refused{Reason: "bad-annotation", Message: fmt.Sprintf(
			"annotation %s: %q is not valid; write %s (\"false\" opts the pod out of sparklet)",
			vocab.AnnotationInject, v, knownAnnotations[vocab.AnnotationInject])}
	}
	if v, ok := pod.Annotations[vocab.AnnotationContainer]; ok && strings.TrimSpace(v) == "" {
		return &Refused{Reason: "bad-annotation", Message: fmt.Sprintf(
			"annotation %s is empty; write %s, or remove it", vocab.AnnotationContainer, knownAnnotations[vocab.AnnotationContainer])}
	}
	return nil
}

// optedOut tells whether the pod opts out with sparklet.io/inject: "false".
func optedOut(pod *corev1.Pod) bool {
	v, ok := pod.Annotations[vocab.AnnotationInject]
	return ok && strings.EqualFold(v, "false")
}

// ignoredAnnotations warns about the sparklet.io/ annotations of a pod that
// sparklet leaves alone, since none of them takes effect.
func ignoredAnnotations(pod *corev1.Pod, why string) []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if strings.HasPrefix(k, annotationPrefix) && k != vocab.AnnotationInject {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("sparklet ignored annotation %s: %s", strings.Join(keys, ", "), why)}
}

// warnWrittenBySparklet warns when a pod that sparklet has not injected yet
// sets an annotation sparklet writes: its value is replaced.
func warnWrittenBySparklet(pod *corev1.Pod, p *plan) error {
	if _, injected := pod.Annotations[vocab.AnnotationStatus]; injected {
		return nil
	}
	if _, ok := pod.Annotations[vocab.AnnotationEffectiveConf]; ok {
		p.warn(fmt.Sprintf("sparklet replaced annotation %s, which it writes itself; put your Spark properties in %s",
			vocab.AnnotationEffectiveConf, vocab.AnnotationSparkConf))
	}
	if _, ok := pod.Annotations[vocab.AnnotationScheduling]; ok {
		p.warn(fmt.Sprintf("sparklet replaced annotation %s, which it writes itself (or removed it, for a driver without a batch scheduler); "+
			"choose the scheduler and queue with %s and %s", vocab.AnnotationScheduling, vocab.AnnotationBatchScheduler, vocab.AnnotationQueue))
	}
	return nil
}
