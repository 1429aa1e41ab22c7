package inject

import (
	"bytes"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

func examplePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	data, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(data, "dev")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, input string, p *policy.Policy) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := Run(strings.NewReader(input), &out, Options{Policy: p, Namespace: "spark-jobs", Version: "test", AppID: "spark-test"})
	return out.String(), err
}

func TestExamples(t *testing.T) {
	p := examplePolicy(t)
	for _, file := range []string{"spark-pi-pod.yaml", "spark-pi-job.yaml", "spark-pi-cronjob.yaml", "pyspark-pod.yaml", "yunikorn-driver.yaml", "kueue-driver.yaml", "connect-deployment.yaml"} {
		t.Run(file, func(t *testing.T) {
			in, err := os.ReadFile("../examples/" + file)
			if err != nil {
				t.Fatal(err)
			}
			out, err := run(t, string(in), p)
			if err != nil {
				t.Fatal(err)
			}
			spec := podSpecOf(t, out)
			// sparklet's last two init containers: the sidecar, then the
			// conf init container that waits for it.
			if n := len(spec.InitContainers); n < 2 || spec.InitContainers[n-2].Name != patches.SidecarName || spec.InitContainers[n-1].Name != patches.ConfInitName {
				t.Errorf("no sidecar followed by the conf init container in %s:\n%s", file, out)
			}
			again, err := run(t, out, p)
			if err != nil {
				t.Fatal(err)
			}
			if again != out {
				t.Errorf("injecting the output again changed it:\n--- once\n%s\n--- twice\n%s", out, again)
			}
		})
	}
}

// podSpecOf finds the pod spec in a Pod or in a workload's template.
func podSpecOf(t *testing.T, doc string) corev1.PodSpec {
	t.Helper()
	var obj struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	spec := obj.Spec
	switch obj.Kind {
	case "Pod":
	case "CronJob":
		spec = spec["jobTemplate"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	default:
		spec = spec["template"].(map[string]any)["spec"].(map[string]any)
	}
	data, _ := yaml.Marshal(spec)
	var ps corev1.PodSpec
	if err := yaml.Unmarshal(data, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestWorkloadKindsAndPassThrough(t *testing.T) {
	const input = `apiVersion: v1
kind: ConfigMap
metadata: {name: untouched}
data: {a: "1"}   # comments survive in documents sparklet does not change
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {spark-role: driver}}
        spec:
          restartPolicy: Never
          containers: [{name: spark, image: apache/spark:3.5.4, args: [driver]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`
	out, err := run(t, input, policy.Default("dev"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "---\n")
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3:\n%s", len(docs), out)
	}
	if !strings.Contains(docs[0], "# comments survive") {
		t.Errorf("the ConfigMap was rewritten:\n%s", docs[0])
	}
	if spec := podSpecOf(t, docs[1]); len(spec.InitContainers) != 2 || spec.InitContainers[0].Name != patches.SidecarName {
		t.Errorf("the CronJob's template was not injected:\n%s", docs[1])
	}
	if !strings.Contains(docs[2], "image: nginx") || strings.Contains(docs[2], patches.SidecarName) {
		t.Errorf("a non-driver template was changed:\n%s", docs[2])
	}
}

func TestRefusalIsAnError(t *testing.T) {
	in, err := os.ReadFile("../examples/refused-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, string(in), examplePolicy(t))
	if err == nil || !strings.Contains(err.Error(), "limits.maxExecutors=100") {
		t.Fatalf("err = %v, want the maxExecutors refusal", err)
	}
	if out != "" {
		t.Errorf("a refused document was printed:\n%s", out)
	}
}
