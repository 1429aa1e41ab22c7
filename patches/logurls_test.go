package patches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

const logsPolicy = "logs: {executorURL: \"https://logs.example.com/{{NAMESPACE}}/{{POD_NAME}}?app={{APP_ID}}&exec={{EXECUTOR_ID}}\"}\n"

func TestExecutorLogURL(t *testing.T) {
	pol := mustPolicy(t, logsPolicy)
	for name, tc := range map[string]struct {
		conf, want string
	}{
		"policy's":   {"", pol.ExecutorLogURL},
		"pod's kept": {"spark.ui.custom.executor.log.url https://mine.example.com/{{POD_NAME}}", "https://mine.example.com/{{POD_NAME}}"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf} })
			if _, err := inject(t, pod, pol); err != nil {
				t.Fatal(err)
			}
			conf, err := EffectiveConf(pod.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			if got := conf[keyExecutorLogURL]; got != tc.want {
				t.Errorf("%s = %q, want %q", keyExecutorLogURL, got, tc.want)
			}
		})
	}
}

// Every placeholder the policy accepts is an attribute the executor gets,
// from the pod's own fields, and an attribute the pod sets is kept.
func TestExecutorLogAttributes(t *testing.T) {
	pod := executorPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: executorAttributeEnv + "NODE_NAME", Value: "mine"}}
	})
	if _, err := Executor(pod, ExecutorInput{Policy: mustPolicy(t, logsPolicy), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	for _, name := range policy.ExecutorLogPlaceholders {
		if _, ok := env[executorAttributeEnv+name]; !ok {
			t.Errorf("no %s%s for the placeholder {{%s}}", executorAttributeEnv, name, name)
		}
	}
	if e := env[executorAttributeEnv+"POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME attribute = %+v, want the pod's metadata.name", e)
	}
	if e := env[executorAttributeEnv+"NODE_NAME"]; e.Value != "mine" {
		t.Errorf("the pod's own NODE_NAME attribute replaced: %+v", e)
	}
	plain := executorPod()
	if _, err := Executor(plain, ExecutorInput{Policy: mustPolicy(t, ""), AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	for _, e := range plain.Spec.Containers[0].Env {
		if len(e.Name) > len(executorAttributeEnv) && e.Name[:len(executorAttributeEnv)] == executorAttributeEnv {
			t.Errorf("attribute %s without a log URL in the policy", e.Name)
		}
	}
}
