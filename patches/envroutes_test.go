package patches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
)

// TestPolicyEnvRoutes: the driver policy's env is read like the pod's, so
// the effective conf says the same on the first injection and on a
// reinvocation, which sees the env the policy step set.
func TestPolicyEnvRoutes(t *testing.T) {
	pol := mustPolicy(t, `
driver:
  defaults:
    env: [{name: JAVA_TOOL_OPTIONS, value: "-Dspark.executor.memory=3g -Dspark.sql.ansi.enabled=true"}]
`)
	pod := driverPod()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	conf, err := sparkconf.Parse(pod.Annotations[vocab.AnnotationEffectiveConf])
	if err != nil {
		t.Fatal(err)
	}
	if conf["spark.executor.memory"] != "3g" || conf["spark.sql.ansi.enabled"] != "true" {
		t.Errorf("effective conf %v misses the policy env's -D properties", conf)
	}
	once := pod.DeepCopy()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(once, pod) {
		t.Error("a second injection changed the pod")
	}
}

// TestEnvRoutesRankBelowTheConfFile: a -D option or spark-submit variable
// gives a key only when nothing in spark-defaults.conf does.
func TestEnvRoutesRankBelowTheConfFile(t *testing.T) {
	pol := mustPolicy(t, testPolicy) // spark.executor.instances defaults to 2
	pod := driverPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.executor.cores 2\n"}
		p.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "_JAVA_OPTIONS", Value: "-Dspark.executor.instances=7 -Dspark.executor.cores=3 -Dspark.executor.memory=5g"},
			{Name: "SPARK_EXECUTOR_MEMORY", Value: "6g"},
		}
	})
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"spark.executor.instances": "2", "spark.executor.cores": "2", "spark.executor.memory": "6g"} {
		if conf[k] != want {
			t.Errorf("%s = %q, want %q", k, conf[k], want)
		}
	}
}
