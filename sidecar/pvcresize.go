package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var pvcGR = schema.GroupResource{Resource: "persistentvolumeclaims"}

// Spark 4.2's ExecutorPVCResizePlugin grows an executor's PVC when the
// executor reports its local directories fuller than
// spark.kubernetes.executor.pvc.resizeThreshold: the driver GETs the PVC
// and sends a strategic-merge PATCH of a PersistentVolumeClaim whose only
// content is spec.resources.requests.storage, the current request x (1 +
// spark.kubernetes.executor.pvc.resizeFactor) in bytes
// (ExecutorPVCResizePlugin.scala, read in the 4.3.0 jar). Only the PVCs
// Spark mounts as spark-local-dir-* are grown.

// servePVC answers a GET or PATCH of one of this application's PVCs.
func (a *API) servePVC(w http.ResponseWriter, req *request) {
	pvc, err := a.ownPVC(req)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.verb == "get" {
		writeObject(w, http.StatusOK, pvc)
		return
	}
	body, err := req.body()
	if err != nil {
		writeError(w, err)
		return
	}
	size, err := parsePVCResize(req.patchType(), body)
	if err == nil {
		err = a.checkPVCResize(req, pvc, size)
	}
	if err == nil {
		patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%s}}}}`, strconv.Quote(size.String()))
		pvc, err = a.client.PersistentVolumeClaims(a.namespace).Patch(req.Context(), req.name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: fieldManager})
		if err != nil {
			err = refusedByAPIServer(fmt.Sprintf("PVC %q: the API server refused its resize to storage %s", req.name, size.String()), err)
		}
	}
	if err != nil {
		a.refuseGrowth(w, pvcGR, req.name, "PVCResizeRefused", err)
		return
	}
	msg := fmt.Sprintf("PVC %s asks for storage %s, as the driver asked; the volume grows when the storage's CSI resizer expands it", req.name, size.String())
	a.log.WithField("pvc", req.name).Info(msg)
	a.alloc.events.normal("PVCResized", msg)
	pvc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	writeObject(w, http.StatusOK, pvc)
}

// ownPVC reads the PVC the request names, which must be this
// application's (apps.owns: labelled with its id, as Spark labels the PVCs
// it creates). Any other PVC is not found.
func (a *API) ownPVC(req *request) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := a.client.PersistentVolumeClaims(a.namespace).Get(req.Context(), req.name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(pvcGR, req.name)
		}
		return nil, err
	}
	if !a.apps.owns(pvc.Labels) {
		return nil, apierrors.NewNotFound(pvcGR, req.name)
	}
	pvc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	return pvc, nil
}

// pvcResizeChange is what a PVC resize may change.
const pvcResizeChange = "a PVC resize changes spec.resources.requests.storage only"

// parsePVCResize reads the storage request of the patch Spark sends, and
// refuses a patch that changes anything else.
func parsePVCResize(pt types.PatchType, body []byte) (resource.Quantity, error) {
	var size resource.Quantity
	if pt != types.StrategicMergePatchType && pt != types.MergePatchType {
		return size, fmt.Errorf("patch type %q is not one Spark sends; use application/strategic-merge-patch+json", pt)
	}
	var pvc map[string]json.RawMessage
	if err := json.Unmarshal(body, &pvc); err != nil {
		return size, fmt.Errorf("the patch is not a JSON object: %w", err)
	}
	spec, err := subObject(pvc, "spec", "", "apiVersion", "kind")
	if err != nil {
		return size, err
	}
	res, err := subObject(spec, "resources", "spec.")
	if err != nil {
		return size, err
	}
	requests, err := subObject(res, "requests", "spec.resources.")
	if err != nil {
		return size, err
	}
	if err := onlyFields(requests, pvcResizeChange, "spec.resources.requests.", "storage"); err != nil {
		return size, err
	}
	for k, want := range map[string]string{"apiVersion": "v1", "kind": "PersistentVolumeClaim"} {
		if v, ok := pvc[k]; ok && string(v) != strconv.Quote(want) {
			return size, fmt.Errorf("%s %s is refused", k, v)
		}
	}
	var s string
	if err := json.Unmarshal(requests["storage"], &s); err != nil {
		return size, fmt.Errorf("spec.resources.requests.storage must be a quantity string")
	}
	size, err = resource.ParseQuantity(s)
	if err != nil {
		return size, fmt.Errorf("spec.resources.requests.storage=%q: %w", s, err)
	}
	return size, nil
}

// subObject is the object at key of a PVC patch, which may hold nothing
// else than others.
func subObject(obj map[string]json.RawMessage, key, at string, others ...string) (map[string]json.RawMessage, error) {
	if err := onlyFields(obj, pvcResizeChange, at, append(others, key)...); err != nil {
		return nil, err
	}
	var sub map[string]json.RawMessage
	if err := json.Unmarshal(obj[key], &sub); err != nil || sub == nil {
		return nil, fmt.Errorf("the patch sets no spec.resources.requests.storage")
	}
	return sub, nil
}

// checkPVCResize checks the storage asked for against the policy and the
// PVC's StorageClass.
func (a *API) checkPVCResize(req *request, pvc *corev1.PersistentVolumeClaim, size resource.Quantity) error {
	max := a.alloc.policy.Limits.Executor.MaxPVCSize
	if max == nil {
		return fmt.Errorf("PVC %q: the policy sets no limits.executor.maxPVCSize, so the sidecar grows no PVC", pvc.Name)
	}
	cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.Cmp(cur) <= 0 {
		return fmt.Errorf("PVC %q: storage %s is not above its request %s; PVCs only grow", pvc.Name, size.String(), cur.String())
	}
	if size.Cmp(*max) > 0 {
		return fmt.Errorf("PVC %q: storage %s is over the policy limit limits.executor.maxPVCSize=%s; it keeps %s",
			pvc.Name, size.String(), max.String(), cur.String())
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class == "" {
		return fmt.Errorf("PVC %q has no StorageClass; only a PVC of a StorageClass with allowVolumeExpansion: true grows", pvc.Name)
	}
	expands, err := a.client.StorageClassExpands(req.Context(), class)
	switch {
	case apierrors.IsForbidden(err):
		// Without RBAC to read StorageClasses, the API server's
		// PersistentVolumeClaimResize admission judges the class alone.
		a.log.WithField("pvc", pvc.Name).Debug("cannot read StorageClass " + class + ": " + err.Error())
	case err != nil:
		return fmt.Errorf("PVC %q: reading its StorageClass %s: %w", pvc.Name, class, err)
	case !expands:
		return fmt.Errorf("PVC %q: its StorageClass %s does not set allowVolumeExpansion: true, so its volumes cannot grow", pvc.Name, class)
	}
	return nil
}
