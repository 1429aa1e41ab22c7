package e2e

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/inject"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// TestEveryJobPodGetsItsOwnAppID runs Jobs of three parallel driver pods,
// from the example's template as written and as `sparklet inject`
// renders it: through the real admission chain (with reinvocation), each
// pod gets an application id of its own, the same in its label and in the
// configuration its JVM reads.
func TestEveryJobPodGetsItsOwnAppID(t *testing.T) {
	data, err := os.ReadFile("../examples/spark-pi-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	polData, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(polData, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := inject.Run(bytes.NewReader(data), &rendered, inject.Options{Policy: pol, Version: "e2e"}); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{"plain": data, "rendered": rendered.Bytes()} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			ns := namespace(t, true)
			var job batchv1.Job
			if err := yaml.Unmarshal(doc, &job); err != nil {
				t.Fatal(err)
			}
			three := int32(3)
			job.Namespace, job.Spec.Parallelism, job.Spec.Completions = "", &three, &three
			if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var pods []corev1.Pod
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
				if err != nil {
					return false, nil
				}
				pods = list.Items
				return len(pods) >= 3, nil
			})
			if err != nil {
				t.Fatalf("the Job controller created %d pods, want 3: %v", len(pods), err)
			}
			seen := map[string]string{}
			for i := range pods {
				pod := &pods[i]
				requireInjected(t, pod)
				id := pod.Labels[vocab.LabelAppID]
				conf, err := patches.EffectiveConf(pod.Annotations)
				if err != nil {
					t.Fatal(err)
				}
				if id == "" || conf["spark.app.id"] != id {
					t.Errorf("pod %s: label %q, spark.app.id %q: want one id in both", pod.Name, id, conf["spark.app.id"])
				}
				if other, ok := seen[id]; ok {
					t.Errorf("pods %s and %s share the application id %s", other, pod.Name, id)
				}
				seen[id] = pod.Name
			}
		})
	}
}
