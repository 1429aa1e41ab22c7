package inject

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sparklet/sparklet/policy"
)

// TestWarningsGoToTheWriter: a pod whose arguments cannot be read is
// injected, and the warning is reported with the object's name.
func TestWarningsGoToTheWriter(t *testing.T) {
	input := `apiVersion: v1
kind: Pod
metadata: {name: scripted, labels: {spark-role: driver}}
spec:
  containers:
  - name: spark
    image: apache/spark:3.5.4
    command: [bash, -lc, "cd /app && spark-submit main.py"]
`
	var out, warnings bytes.Buffer
	err := Run(strings.NewReader(input), &out, Options{Policy: policy.Default("test"), Namespace: "spark-jobs", Version: "test", AppID: "spark-test", Report: &warnings})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sparklet.io/effective-conf") {
		t.Errorf("not injected:\n%s", out.String())
	}
	want := `warning: container "spark": Spark options in its arguments were not checked: the bash script is not one simple command (it uses &)`
	if got := warnings.String(); !strings.Contains(got, "scripted: "+want) || strings.Count(got, "warning:") != 1 {
		t.Errorf("warnings = %q, want one line naming the pod with %q", got, want)
	}
}
