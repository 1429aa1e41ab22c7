package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// TestPVCResizeThroughTheSidecar grows an application's bound PVC through
// the sidecar as Spark 4.2+'s ExecutorPVCResizePlugin asks (a GET, then a
// strategic-merge PATCH of spec.resources.requests.storage in bytes), on
// the real API server, whose PersistentVolumeClaimResize admission and
// validation judge it too. The PVC's request grows; its capacity does not,
// since no CSI resizer runs here to expand the volume. The namespace's
// policy is taken to set limits.executor.maxPVCSize=20Gi: the sidecar gets
// it in its env, as the webhook would write it from such a policy.
func TestPVCResizeThroughTheSidecar(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireInjected(t, pod)
	app := pod.Labels[vocab.LabelAppID]
	sc := env.StartSidecar(ctx, t, withMaxPVCSize(t, pod, "20Gi"))
	token, err := sc.Token()
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+sc.Listen+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}

	classes := env.Client.StorageV1().StorageClasses()
	for name, expands := range map[string]bool{ns + "-expandable": true, ns + "-fixed": false} {
		if _, err := classes.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/none",
			AllowVolumeExpansion: ptr.To(expands)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	grow := boundPVC(ctx, t, ns, "grow", ns+"-expandable", app)
	fixed := boundPVC(ctx, t, ns, "fixed", ns+"-fixed", app)
	other := boundPVC(ctx, t, ns, "other", ns+"-expandable", "spark-app-of-another-driver")

	if code, body := call(http.MethodGet, pvcURL(ns, grow), nil); code != 200 || !strings.Contains(string(body), `"name":"`+grow+`"`) {
		t.Errorf("GET of the application's PVC: %d %s", code, body)
	}
	if code, _ := call(http.MethodGet, pvcURL(ns, other), nil); code != 404 {
		t.Errorf("GET of another application's PVC: %d, want 404", code)
	}
	grown := int64(1181116006) // 1Gi x 1.1, Spark's default step
	sparkPatch := func(bytes int64) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{},"spec":{"resources":{"requests":{"storage":"%d"}}}}`, bytes)
	}
	if code, body := call(http.MethodPatch, pvcURL(ns, grow), sparkPatch(grown)); code != 200 {
		t.Fatalf("PVC resize: %d %s", code, body)
	}
	got, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, grow, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	request, capacity := got.Spec.Resources.Requests[corev1.ResourceStorage], got.Status.Capacity[corev1.ResourceStorage]
	if request.Value() != grown {
		t.Errorf("PVC %s asks for %s after the resize, want %d", grow, request.String(), grown)
	}
	t.Logf("PVC %s: spec.resources.requests.storage %s, status.capacity.storage %s (no CSI resizer expands the volume here)", grow, request.String(), capacity.String())

	for _, tc := range []struct {
		name, pvc string
		bytes     int64
		code      int
		refused   string
	}{
		{"over maxPVCSize", grow, 30 << 30, 403, "over the policy limit limits.executor.maxPVCSize=20Gi"},
		// The suite's driver Role does not let the sidecar read
		// StorageClasses (the chart's ClusterRole does), so the API
		// server's PersistentVolumeClaimResize admission refuses it.
		{"class without expansion", fixed, grown, 403, "the storageclass that provisions the pvc must support resize"},
		{"another application's", other, grown, 404, ""},
	} {
		code, body := call(http.MethodPatch, pvcURL(ns, tc.pvc), sparkPatch(tc.bytes))
		var st metav1.Status
		_ = json.Unmarshal(body, &st)
		if code == 200 || (tc.code != 0 && code != tc.code) || !strings.Contains(st.Message, tc.refused) {
			t.Errorf("%s: %d %q, want a refusal saying %q", tc.name, code, st.Message, tc.refused)
		} else {
			t.Logf("%s: %d %s", tc.name, code, st.Message)
		}
	}
	for _, name := range []string{fixed, other} {
		p, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Spec.Resources.Requests[corev1.ResourceStorage]; s.String() != "1Gi" {
			t.Errorf("refused PVC %s asks for %s, want 1Gi still", name, s.String())
		}
	}
}

func pvcURL(ns, name string) string {
	return "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name
}

// boundPVC creates a 1Gi PVC of class labelled with app, and a PV bound to
// it (a hostPath the claim never mounts), and waits until the PV
// controller has bound them: the API server lets only bound claims grow.
func boundPVC(ctx context.Context, t *testing.T, ns, name, class, app string) string {
	t.Helper()
	gi := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: gi}, StorageClassName: class,
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/" + ns + "/" + name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	pvs := env.Client.CoreV1().PersistentVolumes()
	if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pvs.Delete(context.Background(), pv.Name, metav1.DeleteOptions{}) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{vocab.LabelAppID: app}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class), VolumeName: pv.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: gi}},
		},
	}
	claims := env.Client.CoreV1().PersistentVolumeClaims(ns)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := claims.Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		t.Fatalf("PVC %s never bound to its PV: %v", name, err)
	}
	return name
}

// withMaxPVCSize is pod with its sidecar's policy setting
// limits.executor.maxPVCSize to size.
func withMaxPVCSize(t *testing.T, pod *corev1.Pod, size string) *corev1.Pod {
	t.Helper()
	out := pod.DeepCopy()
	for i := range out.Spec.InitContainers {
		c := &out.Spec.InitContainers[i]
		if c.Name != patches.SidecarName {
			continue
		}
		for j := range c.Env {
			if c.Env[j].Name != vocab.EnvPolicy {
				continue
			}
			var eff policy.Effective
			if err := json.Unmarshal([]byte(c.Env[j].Value), &eff); err != nil {
				t.Fatal(err)
			}
			q := resource.MustParse(size)
			eff.Limits.Executor.MaxPVCSize = &q
			data, _ := json.Marshal(eff)
			c.Env[j].Value = string(data)
			return out
		}
	}
	t.Fatalf("pod %s has no %s env in its sidecar", pod.Name, vocab.EnvPolicy)
	return nil
}
