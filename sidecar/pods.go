package sidecar

import (
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servePods serves the driver pod and this application's executors: reads
// from the cache, creates through the allocator, deletes and label patches
// through the API server.
func (a *API) servePods(w http.ResponseWriter, req *request) {
	switch req.verb {
	case "get":
		pod, err := a.state.pod(req.name)
		if err != nil {
			writeError(w, err)
			return
		}
		writePod(w, http.StatusOK, pod)
	case "list", "watch":
		a.listPods(w, req)
	case "create":
		a.createPod(w, req)
	case "delete":
		a.deletePod(w, req)
	case "deletecollection":
		a.deletePods(w, req)
	case "patch":
		a.patchPod(w, req)
	default:
		writeError(w, apierrors.NewMethodNotSupported(podsGR, req.verb))
	}
}

// listPods lists or watches the executors, or the driver pod when the
// field selector names it.
func (a *API) listPods(w http.ResponseWriter, req *request) {
	sel, err := req.selectors()
	if err != nil {
		writeError(w, err)
		return
	}
	src := a.state.executors
	if sel.driverOnly(a.driver) {
		src = a.state.driverSource
	} else if _, err := a.apps.use(req.Context(), sel.app()); err != nil {
		writeError(w, err)
		return
	}
	if req.verb == "list" {
		pods, rv := src.list(sel)
		writePodList(w, pods, rv)
		return
	}
	a.serveWatch(w, req, src, sel)
}

// createPod hands an executor to the allocator: 201 when it created the
// pod, 200 when the pod existed already. The allocator's warnings go in
// Warning headers, as the API server sends admission warnings.
func (a *API) createPod(w http.ResponseWriter, req *request) {
	var pod corev1.Pod
	if err := req.decode(&pod); err != nil {
		writeError(w, err)
		return
	}
	c, err := a.alloc.create(req.Context(), &pod)
	addWarnings(w, c.warnings)
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusOK
	if c.isNew {
		code = http.StatusCreated
	}
	writeObject(w, code, withKind(c.pod))
}

// deletePod deletes one executor and answers with it.
func (a *API) deletePod(w http.ResponseWriter, req *request) {
	opts, err := req.deleteOptions()
	if err != nil {
		writeError(w, err)
		return
	}
	if req.name == a.driver {
		writeError(w, apierrors.NewForbidden(podsGR, req.name, fmt.Errorf("the driver cannot delete its own pod through the sidecar")))
		return
	}
	pod, err := a.state.pod(req.name)
	if err != nil {
		writeError(w, err)
		return
	}
	a.state.ends.release(req.name)
	if a.keeper.keep(pod) {
		writePod(w, http.StatusOK, pod)
		return
	}
	if err := a.client.Pods(a.namespace).Delete(req.Context(), req.name, opts); err != nil {
		writeError(w, err)
		return
	}
	writePod(w, http.StatusOK, pod)
}

// deletePods deletes the executors matching the request's selectors, as
// one collection DELETE on the API server would, and answers with them.
func (a *API) deletePods(w http.ResponseWriter, req *request) {
	sel, err := req.selectors()
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := req.deleteOptions()
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := a.apps.use(req.Context(), sel.app()); err != nil {
		writeError(w, err)
		return
	}
	list, rv := a.state.executors.list(sel)
	for _, p := range list {
		a.state.ends.release(p.Name)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(list))
	sem := make(chan struct{}, 16)
	for i := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if a.keeper.keep(list[i]) {
				return
			}
			err := a.client.Pods(a.namespace).Delete(req.Context(), list[i].Name, opts)
			if err != nil && !apierrors.IsNotFound(err) {
				errs[i] = err
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			writeError(w, err)
			return
		}
	}
	writePodList(w, list, rv)
}

// patchPod forwards a label or annotation patch on an executor: Spark
// labels executors inactive or decommissioning this way. The driver's own
// pod takes only the exit-exception annotation (patchDriver).
func (a *API) patchPod(w http.ResponseWriter, req *request) {
	if req.name == a.driver {
		a.patchDriver(w, req)
		return
	}
	if _, err := a.state.executor(req.name); err != nil {
		writeError(w, err)
		return
	}
	body, err := req.body()
	if err != nil {
		writeError(w, err)
		return
	}
	pt := req.patchType()
	if err := checkMetadataPatch(pt, body); err != nil {
		writeError(w, apierrors.NewForbidden(podsGR, req.name, err))
		return
	}
	pod, err := a.client.Pods(a.namespace).Patch(req.Context(), req.name, pt, body, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, http.StatusOK, withKind(pod))
}
