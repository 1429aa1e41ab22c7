package schedulers

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestKueueCRDVersionKeepsV1beta2Alone(t *testing.T) {
	file := filepath.Join(t.TempDir(), "crd.yaml")
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.kueue.x-k8s.io}
spec:
  conversion: {strategy: Webhook}
  versions:
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta2, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
`
	if err := os.WriteFile(file, []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := kueueCRDVersion(file, KueueVersion)
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("%d versions, want 1: %v", len(versions), versions)
	}
	v := versions[0].(map[string]any)
	if v["name"] != "v1beta2" || v["served"] != true || v["storage"] != true {
		t.Errorf("version = %v, want v1beta2 served and stored", v)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "conversion"); found {
		t.Error("spec.conversion kept: it names a conversion webhook the harness does not run")
	}
	if _, err := kueueCRDVersion(file, "v1"); err == nil {
		t.Error("a CRD without the version was accepted")
	}
}
