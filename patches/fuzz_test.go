package patches

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sparklet/sparklet/fetch/spec"
)

// FuzzDriverAnnotations injects a driver pod carrying arbitrary
// sparklet.io/ annotations and an arbitrary command line. It never panics;
// an error is a refusal or names its step; an injected pod's effective
// conf is what spark-defaults.conf holds, is free of line breaks, and a
// second injection changes nothing.
func FuzzDriverAnnotations(f *testing.F) {
	f.Add("", "", "spark.executor.instances 3\nspark.app.name a\\nb", "", "", "driver\x00--num-executors\x009\x00app.jar")
	f.Add("false", "spark", "", "https://repo.example.com/a.jar", `{"version":"x"}`, "bash\x00-c\x00spark-submit x.py")
	f.Add("true", "other", "spark.a=\\u0000", "- url: https://x/y.tgz\n  unpack: tar.gz", "not json", "sh\x00-c\x00a | b")
	pol := mustPolicy(f, testPolicy)
	f.Fuzz(func(t *testing.T, inject, container, sparkConf, fetch, status, command string) {
		pod := driverPod()
		pod.Annotations = map[string]string{}
		for k, v := range map[string]string{AnnotationInject: inject, AnnotationContainer: container,
			AnnotationSparkConf: sparkConf, spec.Annotation: fetch, AnnotationStatus: status} {
			if v != "" {
				pod.Annotations[k] = v
			}
		}
		if command != "" {
			pod.Spec.Containers[0].Args = strings.Split(command, "\x00")
		}
		res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
		var stepErr *StepError
		if err != nil {
			if !errors.As(err, &stepErr) {
				t.Fatalf("error %v is not a StepError", err)
			}
			return
		}
		if res.Skipped != nil {
			return
		}
		text := DeliveredConf(pod.Annotations)
		conf, err := ParseSparkConf(text)
		if err != nil {
			t.Fatalf("the effective conf does not parse: %v\n%s", err, text)
		}
		if again := load(t, text); !maps.Equal(again, conf) {
			t.Fatalf("spark-defaults.conf holds %q, the effective conf %q", again, conf)
		}
		once := pod.DeepCopy()
		if _, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"}); err != nil {
			t.Fatalf("second injection: %v", err)
		}
		if !equality.Semantic.DeepEqual(once, pod) {
			t.Fatalf("a second injection changed the pod")
		}
	})
}
