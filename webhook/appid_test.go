package webhook

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/inject"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

const jobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: pi, namespace: spark-jobs}
spec:
  template:
    metadata:
      labels: {spark-role: driver%s}
    spec:
      restartPolicy: Never
      containers:
      - name: spark
        image: apache/spark:4.0.0
        args: [driver, --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples.jar]
`

// podFromJob is the pod the Job controller creates from a Job's template.
func podFromJob(t *testing.T, job []byte) []byte {
	t.Helper()
	var obj struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(job, &obj); err != nil {
		t.Fatal(err)
	}
	yes := true
	pod := corev1.Pod{ObjectMeta: obj.Spec.Template.ObjectMeta, Spec: obj.Spec.Template.Spec}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	pod.GenerateName = "pi-"
	pod.OwnerReferences = append(pod.OwnerReferences, metav1OwnerRef("Job", "pi", "0b0c1d2e-0000-4000-8000-00000000000a", &yes))
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// appIDs returns the application id an admitted pod carries in its label,
// its effective configuration and its status annotation.
func appIDs(t *testing.T, admitted []byte) (label, conf, status string) {
	t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal(admitted, &pod); err != nil {
		t.Fatal(err)
	}
	c, err := patches.EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	var st patches.Status
	if err := json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &st); err != nil {
		t.Fatal(err)
	}
	return pod.Labels[vocab.LabelAppID], c["spark.app.id"], st.AppID
}

// Every pod a Job creates gets its own application id, from a plain
// template, from one rendered by `sparklet inject`, and from one whose
// labels carry an id; a pod admitted again keeps its own.
func TestEveryPodFromATemplateGetsItsOwnAppID(t *testing.T) {
	h := testHandler(t)
	data, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(data, "dev")
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := inject.Run(strings.NewReader(strings.ReplaceAll(jobYAML, "%s", "")), &rendered, inject.Options{Policy: pol, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rendered.String(), vocab.LabelAppID) || strings.Contains(rendered.String(), "spark.app.id") {
		t.Fatalf("the rendered template carries an application id, which every pod would share:\n%s", rendered.String())
	}
	templates := map[string][]byte{
		"plain":             []byte(strings.ReplaceAll(jobYAML, "%s", "")),
		"sparklet inject":   rendered.Bytes(),
		"labelled template": []byte(strings.ReplaceAll(jobYAML, "%s", ", spark-app-selector: spark-shared")),
	}
	for name, job := range templates {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for i := 0; i < 3; i++ {
				out, refused := admitPod(t, h, podFromJob(t, job))
				if refused != "" {
					t.Fatal(refused)
				}
				label, conf, status := appIDs(t, out)
				if label == "" || label != conf || label != status {
					t.Fatalf("pod %d: label %q, spark.app.id %q, status %q: want one id in all three", i, label, conf, status)
				}
				if seen[label] {
					t.Fatalf("pod %d has the application id %s of an earlier pod of the same template", i, label)
				}
				seen[label] = true
				again, refused := admitPod(t, h, out)
				if refused != "" {
					t.Fatal(refused)
				}
				if l, _, _ := appIDs(t, again); l != label {
					t.Errorf("admitted again (reinvocation), the pod's id changed from %s to %s", label, l)
				}
			}
		})
	}
}

func metav1OwnerRef(kind, name, uid string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "batch/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: controller}
}
