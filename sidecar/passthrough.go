package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sparklet/sparklet/vocab"
)

// servePassThrough forwards Spark's ConfigMap, PVC and Service calls with
// the namespace and the application label enforced.
func (a *API) servePassThrough(w http.ResponseWriter, req *request) {
	if allowed := verbsOf(req.resource); !slices.Contains(allowed, req.verb) {
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: req.resource}, req.name,
			fmt.Errorf("the sparklet sidecar allows %s on %s", strings.Join(allowed, ", "), req.resource)))
		return
	}
	if req.verb == "create" {
		a.createPassThrough(w, req)
		return
	}
	if req.verb == "get" || req.verb == "patch" { // persistentvolumeclaims only
		a.servePVC(w, req)
		return
	}
	sel, err := req.selectors()
	if err != nil {
		writeError(w, err)
		return
	}
	app, err := a.apps.use(req.Context(), sel.app())
	if err != nil {
		writeError(w, err)
		return
	}
	lo := metav1.ListOptions{LabelSelector: a.apps.scope(sel.labels, app).String(), FieldSelector: sel.fields.String()}
	switch req.verb {
	case "list": // persistentvolumeclaims only
		list, err := a.client.PersistentVolumeClaims(a.namespace).List(req.Context(), lo)
		if err != nil {
			writeError(w, err)
			return
		}
		list.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaimList"}
		if list.Items == nil {
			// The API server sends [] and Spark 3.5 fails on null
			// (ExecutorPodsAllocator.getReusablePVCs, v3.5.9).
			list.Items = []corev1.PersistentVolumeClaim{}
		}
		writeObject(w, http.StatusOK, list)
	case "deletecollection":
		opts, err := req.deleteOptions()
		if err != nil {
			writeError(w, err)
			return
		}
		if err := a.deleteCollection(req.Context(), req.resource, opts, lo); err != nil {
			writeError(w, err)
			return
		}
		writeSuccess(w)
	}
}

func (a *API) deleteCollection(ctx context.Context, resource string, opts metav1.DeleteOptions, lo metav1.ListOptions) error {

	switch resource {
	case "configmaps":
		return a.client.ConfigMaps(a.namespace).DeleteCollection(ctx, opts, lo)
	case "persistentvolumeclaims":
		return a.client.PersistentVolumeClaims(a.namespace).DeleteCollection(ctx, opts, lo)
	}
	// Services have no collection delete in the API; delete them one by one.
	list, err := a.client.Services(a.namespace).List(ctx, lo)
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := a.client.Services(a.namespace).Delete(ctx, s.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// createPassThrough creates an executor ConfigMap or an on-demand PVC, the
// two resources that allow create.
func (a *API) createPassThrough(w http.ResponseWriter, req *request) {
	var (
		out any
		err error
	)
	if req.resource == "configmaps" {
		out, err = a.createConfigMap(req)
	} else {
		out, err = a.createPVC(req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, http.StatusCreated, out)
}

func (a *API) createConfigMap(req *request) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	if err := a.decodeOwned(req, &cm, &cm.ObjectMeta); err != nil {
		return nil, err
	}
	out, err := a.client.ConfigMaps(a.namespace).Create(req.Context(), &cm, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, err
	}
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	return out, nil
}

func (a *API) createPVC(req *request) (*corev1.PersistentVolumeClaim, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := a.decodeOwned(req, &pvc, &pvc.ObjectMeta); err != nil {
		return nil, err
	}
	out, err := a.client.PersistentVolumeClaims(a.namespace).Create(req.Context(), &pvc, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, err
	}
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	return out, nil
}

// decodeOwned decodes the object to create and checks that it belongs to
// this application and namespace.
func (a *API) decodeOwned(req *request, obj any, meta *metav1.ObjectMeta) error {
	if err := req.decode(obj); err != nil {
		return err
	}
	gr := schema.GroupResource{Resource: req.resource}
	got := meta.Labels[vocab.LabelAppID]
	app, err := a.apps.use(req.Context(), got)
	if err != nil {
		return err
	}
	if got != app || app == "" {
		return apierrors.NewForbidden(gr, meta.Name,
			fmt.Errorf("it must carry label %s=%s (this driver's application), got %q", vocab.LabelAppID, app, got))
	}
	a.apps.stamp(meta)
	if meta.Namespace != "" && meta.Namespace != a.namespace {
		return apierrors.NewForbidden(gr, meta.Name, fmt.Errorf("namespace must be %s", a.namespace))
	}
	return nil
}
