package certmanager

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The cert-manager resources the harness reads and writes.
var (
	Issuers      = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	Certificates = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
)

// WaitReady waits until the object ns/name of resource gvr has the
// condition Ready=True.
func (m *CertManager) WaitReady(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration) error {
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := m.exited(); err != nil {
			return false, err
		}
		got, err := m.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = got
		return Condition(got, "Ready") == "True", nil
	})
	if err != nil {
		status := "not found"
		if last != nil {
			status = fmt.Sprint(last.Object["status"])
		}
		return fmt.Errorf("%s %s/%s not Ready (status %s): %w\n%s", gvr.Resource, ns, name, status, err, m.Logs(20))
	}
	return nil
}

// Renew asks cert-manager to issue the Certificate ns/name again now, as
// `cmctl renew` does: it sets the Certificate's Issuing condition to True,
// which is what cert-manager's trigger controller does when renewal is
// due (cert-manager v1.21, pkg/controller/certificates/trigger/
// trigger_controller.go), and the issuing controllers then act on.
func (m *CertManager) Renew(ctx context.Context, ns, name string) error {
	crt, err := m.dyn.Resource(Certificates).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
	keep := []any{}
	for _, c := range conds {
		if c, ok := c.(map[string]any); !ok || c["type"] != "Issuing" {
			keep = append(keep, c)
		}
	}
	keep = append(keep, map[string]any{
		"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message":            "Certificate re-issuance manually triggered",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		"observedGeneration": crt.GetGeneration(),
	})
	if err := unstructured.SetNestedSlice(crt.Object, keep, "status", "conditions"); err != nil {
		return err
	}
	if _, err := m.dyn.Resource(Certificates).Namespace(ns).UpdateStatus(ctx, crt, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set the Issuing condition of %s/%s: %w", ns, name, err)
	}
	return nil
}
