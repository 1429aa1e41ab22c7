package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/vocab"
)

const pvcPolicy = "limits: {executor: {maxPVCSize: 20Gi}}"

const pvcPath = "/api/v1/namespaces/spark/persistentvolumeclaims/pi-exec-1-pvc-0"

// sparkPVCResize is the body Spark 4.3.0's ExecutorPVCResizePlugin sends: a
// fabric8 PersistentVolumeClaimBuilder with only the storage request, in
// bytes (Quantity of Long.toString).
func sparkPVCResize(bytes int64) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{},"spec":{"resources":{"requests":{"storage":"%d"}}}}`, bytes)
}

// appPVC is an on-demand PVC Spark created for the application's first
// executor, of class, asking for 10Gi.
func appPVC(app, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pi-exec-1-pvc-0", Namespace: testNS, Labels: map[string]string{vocab.LabelAppID: app}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
}

func storageClass(name string, expands bool) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(expands)}
}

// TestPVCGrownWithinPolicy: the driver reads its PVC and grows its storage
// request through the sidecar, within limits.executor.maxPVCSize.
func TestPVCGrownWithinPolicy(t *testing.T) {
	h := start(t, pvcPolicy, appPVC(testApp, "expandable"), storageClass("expandable", true))
	code, body := h.do(http.MethodGet, pvcPath, "", nil)
	var got corev1.PersistentVolumeClaim
	if err := json.Unmarshal(body, &got); code != 200 || err != nil || got.Kind != "PersistentVolumeClaim" || got.Name != "pi-exec-1-pvc-0" {
		t.Fatalf("GET of the application's PVC: %d %s", code, body)
	}
	grown := int64(11811160064) // 10Gi x 1.1, Spark's default step
	if code, body := h.do(http.MethodPatch, pvcPath, strategic, sparkPVCResize(grown)); code != 200 {
		t.Fatalf("PVC resize: %d %s", code, body)
	}
	pvc, err := h.client.CoreV1().PersistentVolumeClaims(testNS).Get(context.Background(), "pi-exec-1-pvc-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; s.Value() != grown {
		t.Errorf("PVC storage request %s after the resize, want %d", s.String(), grown)
	}
	if len(pvc.Spec.AccessModes) != 1 || *pvc.Spec.StorageClassName != "expandable" {
		t.Errorf("the resize changed more than the storage request: %+v", pvc.Spec)
	}
	waitEvent(t, h.client, "PVCResized", func(e corev1.Event) bool {
		return strings.Contains(e.Message, "PVC pi-exec-1-pvc-0 asks for storage 11811160064")
	})
}

// TestPVCResizeRefusals: what the sidecar refuses of a PVC resize, with a
// Status naming the rule, none of it reaching the API server.
func TestPVCResizeRefusals(t *testing.T) {
	ok := sparkPVCResize(11811160064)
	for _, tc := range []struct {
		name, policy, contentType string
		objects                   []runtime.Object
		body                      []byte
		code                      int
		refused                   string
	}{
		{name: "no maxPVCSize", policy: "{}", body: ok, refused: "sets no limits.executor.maxPVCSize"},
		{name: "over maxPVCSize", body: sparkPVCResize(30 << 30), refused: "over the policy limit limits.executor.maxPVCSize=20Gi; it keeps 10Gi"},
		{name: "smaller", body: sparkPVCResize(5 << 30), refused: "PVCs only grow"},
		{name: "class without expansion", objects: []runtime.Object{appPVC(testApp, "fixed"), storageClass("fixed", false)}, body: ok,
			refused: "StorageClass fixed does not set allowVolumeExpansion: true"},
		{name: "no class", objects: []runtime.Object{appPVC(testApp, "")}, body: ok, refused: "has no StorageClass"},
		{name: "another app's PVC", objects: []runtime.Object{appPVC("spark-app-other", "expandable")}, body: ok, code: 404},
		{name: "a label too", body: []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"resources":{"requests":{"storage":"11Gi"}}}}`),
			refused: "changes spec.resources.requests.storage only, not metadata"},
		{name: "access modes too", body: []byte(`{"spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"11Gi"}}}}`),
			refused: "not spec.accessModes"},
		{name: "a limit too", body: []byte(`{"spec":{"resources":{"limits":{"storage":"11Gi"},"requests":{"storage":"11Gi"}}}}`),
			refused: "not spec.resources.limits"},
		{name: "json patch", contentType: jsonPatch, body: []byte(`[{"op":"replace","path":"/spec/resources/requests/storage","value":"11Gi"}]`),
			refused: `patch type "application/json-patch+json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := pvcPolicy
			if tc.policy != "" {
				pol = tc.policy
			}
			objects := tc.objects
			if objects == nil {
				objects = []runtime.Object{appPVC(testApp, "expandable"), storageClass("expandable", true)}
			}
			h := start(t, pol, objects...)
			ct := strategic
			if tc.contentType != "" {
				ct = tc.contentType
			}
			code, body := h.do(http.MethodPatch, pvcPath, ct, tc.body)
			wantRefusal(t, code, body, tc.code, tc.refused)
			if n := h.actions("patch", "persistentvolumeclaims"); n != 0 {
				t.Errorf("a refused PVC resize reached the API server: %d patches", n)
			}
		})
	}
}
