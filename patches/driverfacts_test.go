package patches

import (
	"errors"
	"strings"
	"testing"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// TestReadDriver: the facts of an injected driver are its effective conf
// and its recorded scheduling with the gang's executor size.
func TestReadDriver(t *testing.T) {
	yk := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn", vocab.AnnotationSparkConf, "spark.executor.instances 3\n")), "")
	d := ReadDriver(yk)
	if d.Pod != yk || d.ConfErr != nil || d.SchedulingErr != nil {
		t.Fatalf("facts: pod %p (want %p), conf error %v, scheduling error %v", d.Pod, yk, d.ConfErr, d.SchedulingErr)
	}
	if d.Conf["spark.executor.instances"] != "3" || d.Conf["spark.app.id"] != "spark-test" {
		t.Errorf("conf = %v, want the pod's own keys and the webhook's", d.Conf)
	}
	if d.Scheduling == nil || d.Scheduling.Scheduler != policy.SchedulerYuniKorn || d.Scheduling.Executors != 3 {
		t.Fatalf("scheduling = %+v, want YuniKorn with a gang of 3 executors", d.Scheduling)
	}
	size, ok := d.gangExecutor()
	if !ok || size.Cpu().String() != "1" || size.Memory().String() != "1408Mi" {
		t.Errorf("gang executor = %v, %v; want 1 CPU and 1408Mi", size, ok)
	}

	plain := ReadDriver(injectOK(t, driverPod(), ""))
	if plain.Scheduling != nil || plain.SchedulingErr != nil || plain.Conf == nil {
		t.Errorf("a driver without a batch scheduler: %+v", plain)
	}
	if _, ok := plain.gangExecutor(); ok {
		t.Error("a driver without a batch scheduler has a gang")
	}
}

// TestReadDriverErrors: a fact the annotations cannot give is nil with an
// error naming the annotation; an unreadable scheduling refuses every
// executor with that error, as before the facts were parsed once.
func TestReadDriverErrors(t *testing.T) {
	pod := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn")), "")
	pod.Annotations[vocab.AnnotationScheduling] = "{not json"
	pod.Annotations[vocab.AnnotationEffectiveConf] = "spark.a 1\nspark.b \x00\n"
	d := ReadDriver(pod)
	if d.Conf != nil || d.ConfErr == nil || !strings.Contains(d.ConfErr.Error(), vocab.AnnotationEffectiveConf) {
		t.Errorf("conf %v, error %v; want none, and an error naming %s", d.Conf, d.ConfErr, vocab.AnnotationEffectiveConf)
	}
	if d.Scheduling != nil || d.SchedulingErr == nil || !strings.Contains(d.SchedulingErr.Error(), vocab.AnnotationScheduling) {
		t.Fatalf("scheduling %+v, error %v; want none, and an error naming %s", d.Scheduling, d.SchedulingErr, vocab.AnnotationScheduling)
	}
	_, err := Executor(executorFor("1", "1408Mi"), ExecutorInput{Policy: mustPolicy(t, ""), Driver: d, AppID: "spark-test"})
	if !errors.Is(err, d.SchedulingErr) {
		t.Errorf("executor of a driver with unreadable scheduling: %v, want %v", err, d.SchedulingErr)
	}
}

// TestExecutorReadsTheFacts: Executor follows the facts it is given, not
// the driver pod's annotations, which it never parses again.
func TestExecutorReadsTheFacts(t *testing.T) {
	yk := injectOK(t, driverPod(annotated(vocab.AnnotationBatchScheduler, "yunikorn")), "")
	d := ReadDriver(yk)
	delete(yk.Annotations, vocab.AnnotationScheduling)
	yk.Annotations[vocab.AnnotationEffectiveConf] = "spark.a \x00\n"
	ex := executorFor("2", "1408Mi")
	res, err := Executor(ex, ExecutorInput{Policy: mustPolicy(t, ""), Driver: d, AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.SchedulerName != policy.SchedulerYuniKorn || len(res.Warnings) != 1 || res.Warnings[0].Reason != WarnExecutorLargerThanGang {
		t.Errorf("scheduler %q, warnings %+v; want YuniKorn's and one %s, as the facts say", ex.Spec.SchedulerName, res.Warnings, WarnExecutorLargerThanGang)
	}
}
