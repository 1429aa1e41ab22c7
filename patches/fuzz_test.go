package patches

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
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
		for k, v := range map[string]string{vocab.AnnotationInject: inject, vocab.AnnotationContainer: container,
			vocab.AnnotationSparkConf: sparkConf, vocab.AnnotationFetch: fetch, vocab.AnnotationStatus: status} {
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
		conf, err := sparkconf.Parse(text)
		if err != nil {
			t.Fatalf("the effective conf does not parse: %v\n%s", err, text)
		}
		again, err := sparkconf.Load(text)
		if err != nil {
			t.Fatalf("load %q: %v", text, err)
		}
		if !maps.Equal(again, conf) {
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

// FuzzEnvRoutes injects a driver whose Spark container sets the env and
// shell routes into the JVM's configuration (the JVM option variables,
// spark-submit's variables, PYSPARK_SUBMIT_ARGS, BASH_ENV) to arbitrary
// values, with $(VAR) references in its args. It never panics; an error
// is a refusal in a StepError; an admitted pod's effective conf never asks
// for cluster deploy mode, keeps the enforced keys, and its executors, as
// Spark would build them, are accepted by the sidecar.
func FuzzEnvRoutes(f *testing.F) {
	f.Add("-Dspark.executor.memory=2g", "-Dspark.submit.deployMode=cluster", "", "cluster", "--deploy-mode cluster pyspark-shell", "$(SPARK_SUBMIT_OPTS)", true)
	f.Add("'-Dspark.eventLog.enabled=false", `-Dspark.a="b c"`, "-Dspark.executor.cores=9", "client", "--conf spark.a=b", "--conf\x00spark.executor.memory=$(X)", false)
	pol := mustPolicy(f, testPolicy)
	f.Fuzz(func(t *testing.T, toolOpts, submitOpts, javaOpts, deployMode, pysparkArgs, args string, python bool) {
		pod := driverPod()
		c := &pod.Spec.Containers[0]
		if python {
			c.Command = []string{"python3", "/opt/app/main.py"}
		} else if args != "" {
			c.Args = append([]string{"driver"}, append(strings.Split(args, "\x00"), "app.jar")...)
		}
		for _, e := range [][2]string{{"X", "$(SPARK_EXECUTOR_MEMORY)"}, {"JAVA_TOOL_OPTIONS", toolOpts}, {"SPARK_SUBMIT_OPTS", submitOpts},
			{"_JAVA_OPTIONS", javaOpts}, {"DEPLOY_MODE", deployMode}, {"SPARK_EXECUTOR_MEMORY", "1g"},
			{"PYSPARK_SUBMIT_ARGS", pysparkArgs}, {"BASH_ENV", toolOpts}} {
			if e[1] != "" {
				c.Env = append(c.Env, corev1.EnvVar{Name: e[0], Value: e[1]})
			}
		}
		_, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"})
		if err != nil {
			var stepErr *StepError
			var r *Refused
			if !errors.As(err, &stepErr) || !errors.As(err, &r) {
				t.Fatalf("error %v is not a refusal in a StepError", err)
			}
			return
		}
		conf, err := sparkconf.Parse(pod.Annotations[vocab.AnnotationEffectiveConf])
		if err != nil {
			t.Fatal(err)
		}
		if conf["spark.submit.deployMode"] == "cluster" {
			t.Fatalf("admitted in cluster deploy mode")
		}
		for k, v := range pol.Spark.Enforced {
			if conf[k] != v {
				t.Fatalf("enforced %s=%s, effective %q", k, v, conf[k])
			}
		}
		ex, err := executorOf(conf)
		if err != nil {
			t.Fatalf("admitted with executors Spark cannot size: %v", err)
		}
		ex.Labels[vocab.LabelAppID] = pod.Labels[vocab.LabelAppID]
		if _, err := Executor(ex, ExecutorInput{Policy: pol, Driver: ReadDriver(pod), AppID: pod.Labels[vocab.LabelAppID]}); err != nil {
			t.Fatalf("admitted, but the sidecar refuses its executors: %v", err)
		}
	})
}
