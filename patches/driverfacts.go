package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// DriverFacts are what the executor patches read of an injected driver
// pod, parsed from its annotations once, when the pod is read, rather
// than by every executor: the effective Spark configuration and the
// batch scheduling the webhook recorded, with the YuniKorn gang and the
// executor size it holds room for. A fact the annotations cannot give is
// nil, with the error that says why; each reader decides what that means
// for it.
type DriverFacts struct {
	// Pod is the driver pod. It is nil at admission, where the driver is
	// still being injected and Conf is all there is.
	Pod *corev1.Pod
	// Conf is the driver's effective Spark configuration, as the JVM
	// reads it (EffectiveConf).
	Conf    map[string]string
	ConfErr error
	// Scheduling is what AnnotationScheduling records; nil when the
	// driver has no batch scheduler.
	Scheduling    *Scheduling
	SchedulingErr error
	// Spark is the driver's Spark container (driverSparkContainer); nil
	// when the pod has none or at admission.
	Spark *corev1.Container
}

// ReadDriver parses an injected driver pod's facts.
func ReadDriver(pod *corev1.Pod) *DriverFacts {
	d := &DriverFacts{Pod: pod, Spark: driverSparkContainer(pod)}
	if conf, err := EffectiveConf(pod.Annotations); err != nil {
		d.ConfErr = fmt.Errorf("annotations %s and %s: %w", vocab.AnnotationSparkConf, vocab.AnnotationEffectiveConf, err)
	} else {
		d.Conf = conf
	}
	if s, ok, err := SchedulingOf(pod); err != nil {
		d.SchedulingErr = err
	} else if ok {
		d.Scheduling = &s
	}
	return d
}

// gangExecutor is the executor size the driver's YuniKorn gang holds room
// for; ok is false when it has no gang or its gang has no executors.
func (d *DriverFacts) gangExecutor() (size corev1.ResourceList, ok bool) {
	s := d.Scheduling
	if s == nil || s.Scheduler != policy.SchedulerYuniKorn || s.Executors == 0 {
		return nil, false
	}
	return s.Executor, true
}
