package nodeenv

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPolicyValues: the values file holds the policy file's document, block
// scalars and blank lines included, under the chart's policy key.
func TestPolicyValues(t *testing.T) {
	dir := t.TempDir()
	policy := "# a comment\nspark:\n  defaults:\n    spark.executor.instances: \"2\"\n\nnamespaces:\n  team:\n    note: |\n      one\n\n      two\nlimits: {maxExecutors: 100}"
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := policyValues(file, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var values struct{ Policy map[string]any }
	var want map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("values file:\n%s\n%v", data, err)
	}
	if err := yaml.Unmarshal([]byte(policy), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(values.Policy, want) {
		t.Errorf("policy in the values file:\n%v\nwant\n%v", values.Policy, want)
	}
}
