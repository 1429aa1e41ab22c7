package certmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs in BinDir/cert-manager-crds and waits until
// they are established.
func (m *CertManager) installCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(m.opts.BinDir, "cert-manager-crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/cert-manager-crds: rebuild with hack/certmanager/build.sh", m.opts.BinDir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := m.dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := m.dyn.Resource(crds).Get(ctx, crd.GetName(), metav1.GetOptions{})
			return err == nil && Condition(got, "Established") == "True", nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.GetName(), err)
		}
	}
	return nil
}

// Condition is the status of obj's condition of type kind, or "" without
// one.
func Condition(obj *unstructured.Unstructured, kind string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == kind {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
