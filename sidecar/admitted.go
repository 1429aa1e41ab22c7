package sidecar

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// The JVM reads its configuration from the driver pod's
// sparklet.io/spark-conf and sparklet.io/effective-conf, and the sidecar
// stamps executors with the batch scheduling its sparklet.io/scheduling
// records. Whoever may patch the pod may edit them after admission. The
// webhook recorded their digests in the sidecar's env, which cannot
// change: the sidecar refuses to start when they no longer match, and
// afterwards keeps the driver's facts it checked at start, whatever later
// versions of the pod say.

// admittedAnnotations are the annotations the sidecar reads only as they
// were at start.
var admittedAnnotations = []string{vocab.AnnotationSparkConf, vocab.AnnotationEffectiveConf, vocab.AnnotationScheduling}

// checkAdmitted refuses a driver pod whose admitted annotations no longer
// match the webhook's digests, with a ConfigurationTampered Event for
// each. An empty digest (pods injected before the webhook recorded it) is
// not checked.
func (s *Sidecar) checkAdmitted(own *corev1.Pod) error {
	checks := []struct{ want, got, msg string }{
		{s.cfg.ConfSHA256, patches.DeliveredDigest(own), fmt.Sprintf(
			"annotation %s or %s was changed after admission, so the JVM would run with a configuration the webhook did not check; "+
				"recreate the pod to change its configuration", vocab.AnnotationSparkConf, vocab.AnnotationEffectiveConf)},
		{s.cfg.SchedulingSHA256, patches.SchedulingDigest(own), fmt.Sprintf(
			"annotation %s was changed after admission, so executors would get a batch scheduler, queue or gang the webhook did not decide; "+
				"recreate the pod to change its scheduling", vocab.AnnotationScheduling)},
	}
	var errs []error
	for _, c := range checks {
		if c.want != "" && c.got != c.want {
			s.events.warning("ConfigurationTampered", c.msg)
			errs = append(errs, errors.New(c.msg))
		}
	}
	if len(errs) > 0 {
		s.events.flush(5 * time.Second)
	}
	return errors.Join(errs...)
}

// annotationsChangedHandler is a handler for the driver pod's informer
// that warns once, with a DriverAnnotationsChanged Event, when a version
// of the pod has admitted annotations other than checked, the pod as the
// sidecar checked it at start.
func (s *Sidecar) annotationsChangedHandler(checked *corev1.Pod) cache.ResourceEventHandler {
	var once sync.Once
	check := func(obj any) {
		c, ok := cachedOf(obj)
		if !ok || c.pod == nil {
			return
		}
		changed := changedAnnotations(checked, c.pod)
		if len(changed) == 0 {
			return
		}
		once.Do(func() {
			what := "annotation " + changed[0]
			if len(changed) > 1 {
				what = "annotations " + strings.Join(changed, ", ")
			}
			msg := what + " of the driver pod changed after the sidecar started; executors keep what was admitted, and a change " +
				"takes effect only for a new pod: recreate the pod to apply it, or undo it, as a restarted sidecar may refuse to start"
			s.log.Warn(msg)
			s.events.warning("DriverAnnotationsChanged", msg)
		})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}
}

// changedAnnotations lists the admitted annotations whose presence or
// value differs between the two pods.
func changedAnnotations(before, after *corev1.Pod) []string {
	var out []string
	for _, k := range admittedAnnotations {
		v1, ok1 := before.Annotations[k]
		v2, ok2 := after.Annotations[k]
		if ok1 != ok2 || v1 != v2 {
			out = append(out, k)
		}
	}
	return out
}
