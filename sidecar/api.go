package sidecar

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/patches"
)

// maxBody caps what the JVM may send in one request.
const maxBody = 4 << 20

var (
	podsGR = schema.GroupResource{Resource: "pods"}
	fieldM = "sparklet-sidecar" // the field manager of every write
)

// API is the Kubernetes API the JVM sees on 127.0.0.1. Every request needs
// the per-pod token; everything is scoped to one namespace and one
// application. Reads come from the informer cache.
type API struct {
	namespace string
	appID     string
	driver    string // the driver pod's name
	token     []byte
	client    kubernetes.Interface
	state     *state
	alloc     *allocator
	metrics   *metrics
	log       *logrus.Entry
	server    *version.Info
}

// ServeHTTP authenticates, routes and answers with Kubernetes objects or a
// metav1.Status.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	verb := verbOf(r)
	if !a.authenticated(r) {
		a.metrics.jvmRequests.WithLabelValues(verb, "", "401").Inc()
		writeError(w, apierrors.NewUnauthorized("a bearer token is required: the JVM reads it from spark.kubernetes.authenticate.oauthTokenFile"))
		return
	}
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	resource := a.route(rec, r, verb)
	a.metrics.jvmRequests.WithLabelValues(verb, resource, fmt.Sprint(rec.code)).Inc()
}

func (a *API) authenticated(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), a.token) == 1
}

// route serves one request and returns the resource it addressed.
func (a *API) route(w http.ResponseWriter, r *http.Request, verb string) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch r.URL.Path {
	case "/version":
		writeJSON(w, http.StatusOK, a.server)
		return "version"
	case "/api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
		return "discovery"
	case "/apis":
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}})
		return "discovery"
	case "/api/v1":
		writeJSON(w, http.StatusOK, resourceList())
		return "discovery"
	}
	// /api/v1/namespaces/{ns}/{resource}[/{name}]
	if len(parts) < 5 || len(parts) > 6 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return "other"
	}
	ns, resource, name := parts[3], parts[4], ""
	if len(parts) == 6 {
		name = parts[5]
	}
	if ns != a.namespace {
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name,
			fmt.Errorf("this sidecar serves only namespace %q, the driver's", a.namespace)))
		return resource
	}
	switch resource {
	case "pods":
		a.servePods(w, r, verb, name)
	case "configmaps", "persistentvolumeclaims", "services":
		a.servePassThrough(w, r, verb, resource, name)
	default:
		writeError(w, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name,
			fmt.Errorf("the sparklet sidecar serves Spark's pods, configmaps, persistentvolumeclaims and services only")))
	}
	return resource
}

func verbOf(r *http.Request) string {
	q := r.URL.Query()
	isCollection := !strings.Contains(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/") ||
		strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 4
	switch r.Method {
	case http.MethodGet:
		switch {
		case isTrue(q.Get("watch")): // python sends "True"

			return "watch"
		case isCollection:
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodDelete:
		if isCollection {
			return "deletecollection"
		}
		return "delete"
	case http.MethodPatch:
		return "patch"
	case http.MethodPut:
		return "update"
	}
	return strings.ToLower(r.Method)
}

func (a *API) servePods(w http.ResponseWriter, r *http.Request, verb, name string) {
	switch verb {
	case "get":
		pod, err := a.state.pod(name)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, withKind(pod))
	case "list", "watch":
		sel, err := parseSelectors(r)
		if err != nil {
			writeError(w, err)
			return
		}
		src := a.state.executors
		if sel.driverOnly(a.driver) {
			src = a.state.driverSource
		}
		if verb == "list" {
			writeJSON(w, http.StatusOK, src.list(sel))
			return
		}
		a.serveWatch(w, r, src, sel)
	case "create":
		var pod corev1.Pod
		if err := decodeBody(r, &pod); err != nil {
			writeError(w, err)
			return
		}
		created, code, err := a.alloc.create(r.Context(), &pod)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, code, withKind(created))
	case "delete":
		opts, err := deleteOptions(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if name == a.driver {
			writeError(w, apierrors.NewForbidden(podsGR, name, fmt.Errorf("the driver cannot delete its own pod through the sidecar")))
			return
		}
		pod, err := a.state.pod(name)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := a.client.CoreV1().Pods(a.namespace).Delete(r.Context(), name, opts); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, withKind(pod))
	case "deletecollection":
		a.deletePods(w, r)
	case "patch":
		a.patchPod(w, r, name)
	default:
		writeError(w, apierrors.NewMethodNotSupported(podsGR, verb))
	}
}

// deletePods deletes the executors matching the request's selectors, as
// one collection DELETE on the API server would, and answers with them.
func (a *API) deletePods(w http.ResponseWriter, r *http.Request) {
	sel, err := parseSelectors(r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	list := a.state.executors.list(sel)
	var wg sync.WaitGroup
	errs := make([]error, len(list.Items))
	sem := make(chan struct{}, 16)
	for i := range list.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			err := a.client.CoreV1().Pods(a.namespace).Delete(r.Context(), list.Items[i].Name, opts)
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
	writeJSON(w, http.StatusOK, list)
}

// patchPod forwards a label or annotation patch on an executor: Spark
// labels executors inactive or decommissioning this way.
func (a *API) patchPod(w http.ResponseWriter, r *http.Request, name string) {
	if _, err := a.state.executor(name); err != nil {
		writeError(w, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	pt := types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	if err := checkMetadataPatch(pt, body); err != nil {
		writeError(w, apierrors.NewForbidden(podsGR, name, err))
		return
	}
	pod, err := a.client.CoreV1().Pods(a.namespace).Patch(r.Context(), name, pt, body, metav1.PatchOptions{FieldManager: fieldM})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, withKind(pod))
}

// protectedLabels may not be changed through the sidecar: they scope what
// it serves.
var protectedLabels = []string{patches.LabelAppID, patches.LabelRole}

// checkMetadataPatch allows patches that only touch labels and annotations
// (and resourceVersion, which fabric8's edit diff adds as a lock).
func checkMetadataPatch(pt types.PatchType, body []byte) error {
	switch pt {
	case types.JSONPatchType:
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal(body, &ops); err != nil {
			return fmt.Errorf("json patch: %w", err)
		}
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" {
				continue
			}
			if !strings.HasPrefix(op.Path, "/metadata/labels") && !strings.HasPrefix(op.Path, "/metadata/annotations") {
				return fmt.Errorf("the sidecar forwards only label and annotation patches; %s %s is not one", op.Op, op.Path)
			}
			for _, l := range protectedLabels {
				if op.Path == "/metadata/labels" || op.Path == "/metadata/labels/"+escapePointer(l) {
					return fmt.Errorf("label %s scopes the sidecar and cannot be changed", l)
				}
			}
		}
		return nil
	case types.MergePatchType, types.StrategicMergePatchType:
		var obj map[string]map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return fmt.Errorf("the sidecar forwards only patches of metadata.labels and metadata.annotations: %w", err)
		}
		for k := range obj {
			if k != "metadata" {
				return fmt.Errorf("the sidecar forwards only metadata patches; %q is not one", k)
			}
		}
		for k, v := range obj["metadata"] {
			switch k {
			case "annotations", "resourceVersion":
			case "labels":
				var l map[string]any
				if err := json.Unmarshal(v, &l); err != nil {
					return fmt.Errorf("metadata.labels: %w", err)
				}
				for _, p := range protectedLabels {
					if _, ok := l[p]; ok {
						return fmt.Errorf("label %s scopes the sidecar and cannot be changed", p)
					}
				}
			default:
				return fmt.Errorf("the sidecar forwards only label and annotation patches; metadata.%s is not one", k)
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported patch type %q: use application/json-patch+json, merge-patch+json or strategic-merge-patch+json", pt)
}

func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// servePassThrough forwards Spark's ConfigMap, PVC and Service calls with
// the namespace and the application label enforced.
func (a *API) servePassThrough(w http.ResponseWriter, r *http.Request, verb, resource, name string) {
	ctx := r.Context()
	gr := schema.GroupResource{Resource: resource}
	allowed := map[string][]string{
		"configmaps":             {"create", "deletecollection"},
		"persistentvolumeclaims": {"create", "list", "deletecollection"},
		"services":               {"deletecollection"},
	}[resource]
	ok := false
	for _, v := range allowed {
		ok = ok || v == verb
	}
	if !ok {
		writeError(w, apierrors.NewForbidden(gr, name, fmt.Errorf("the sparklet sidecar allows %s on %s", strings.Join(allowed, ", "), resource)))
		return
	}
	switch verb {
	case "create":
		a.createPassThrough(ctx, w, r, resource)
		return
	}
	sel, err := parseSelectors(r)
	if err != nil {
		writeError(w, err)
		return
	}
	lo := metav1.ListOptions{LabelSelector: sel.withApp(a.appID).String(), FieldSelector: sel.fields.String()}
	switch verb {
	case "list":
		list, err := a.client.CoreV1().PersistentVolumeClaims(a.namespace).List(ctx, lo)
		if err != nil {
			writeError(w, err)
			return
		}
		list.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaimList"}
		writeJSON(w, http.StatusOK, list)
	case "deletecollection":
		opts, err := deleteOptions(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := a.deleteCollection(ctx, resource, opts, lo); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	}
}

func (a *API) deleteCollection(ctx context.Context, resource string, opts metav1.DeleteOptions, lo metav1.ListOptions) error {
	core := a.client.CoreV1()
	switch resource {
	case "configmaps":
		return core.ConfigMaps(a.namespace).DeleteCollection(ctx, opts, lo)
	case "persistentvolumeclaims":
		return core.PersistentVolumeClaims(a.namespace).DeleteCollection(ctx, opts, lo)
	case "pods":
		return core.Pods(a.namespace).DeleteCollection(ctx, opts, lo)
	}
	// Services have no collection delete in the API; delete them one by one.
	list, err := core.Services(a.namespace).List(ctx, lo)
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := core.Services(a.namespace).Delete(ctx, s.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (a *API) createPassThrough(ctx context.Context, w http.ResponseWriter, r *http.Request, resource string) {
	opts := metav1.CreateOptions{FieldManager: fieldM}
	check := func(meta *metav1.ObjectMeta) error {
		if got := meta.Labels[patches.LabelAppID]; got != a.appID {
			return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, meta.Name,
				fmt.Errorf("it must carry label %s=%s (this driver's application), got %q", patches.LabelAppID, a.appID, got))
		}
		if meta.Namespace != "" && meta.Namespace != a.namespace {
			return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, meta.Name, fmt.Errorf("namespace must be %s", a.namespace))
		}
		return nil
	}
	switch resource {
	case "configmaps":
		var cm corev1.ConfigMap
		if err := decodeBody(r, &cm); err != nil {
			writeError(w, err)
			return
		}
		if err := check(&cm.ObjectMeta); err != nil {
			writeError(w, err)
			return
		}
		out, err := a.client.CoreV1().ConfigMaps(a.namespace).Create(ctx, &cm, opts)
		if err != nil {
			writeError(w, err)
			return
		}
		out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		writeJSON(w, http.StatusCreated, out)
	case "persistentvolumeclaims":
		var pvc corev1.PersistentVolumeClaim
		if err := decodeBody(r, &pvc); err != nil {
			writeError(w, err)
			return
		}
		if err := check(&pvc.ObjectMeta); err != nil {
			writeError(w, err)
			return
		}
		out, err := a.client.CoreV1().PersistentVolumeClaims(a.namespace).Create(ctx, &pvc, opts)
		if err != nil {
			writeError(w, err)
			return
		}
		out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
		writeJSON(w, http.StatusCreated, out)
	}
}

// selectors are a request's label and field selectors.
type selectors struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(r *http.Request) (selectors, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: %v", err))
	}
	for _, req := range fs.Requirements() {
		switch req.Field {
		case "metadata.name", "metadata.namespace", "status.phase", "spec.nodeName", "spec.restartPolicy":
		default:
			return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: field %q is not supported for pods", req.Field))
		}
	}
	return selectors{labels: ls, fields: fs}, nil
}

func (s selectors) matches(p *corev1.Pod) bool {
	return s.labels.Matches(labels.Set(p.Labels)) && s.fields.Matches(fields.Set{
		"metadata.name": p.Name, "metadata.namespace": p.Namespace, "status.phase": string(p.Status.Phase),
		"spec.nodeName": p.Spec.NodeName, "spec.restartPolicy": string(p.Spec.RestartPolicy),
	})
}

// driverOnly reports whether the field selector asks for the driver pod by
// name, as fabric8's waitUntilReady does.
func (s selectors) driverOnly(driver string) bool {
	v, ok := s.fields.RequiresExactMatch("metadata.name")
	return ok && v == driver
}

// withApp narrows the label selector to this application.
func (s selectors) withApp(appID string) labels.Selector {
	req, _ := labels.NewRequirement(patches.LabelAppID, selection.Equals, []string{appID})
	return s.labels.Add(*req)
}

func deleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, apierrors.NewBadRequest("DeleteOptions body: " + err.Error())
		}
	}
	opts.TypeMeta = metav1.TypeMeta{}
	return opts, nil
}

func decodeBody(r *http.Request, into any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := json.Unmarshal(body, into); err != nil {
		return apierrors.NewBadRequest("request body: " + err.Error())
	}
	return nil
}

func withKind(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	return out
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func writeError(w http.ResponseWriter, err error) {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, &s)
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

// Flush lets watch streams through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets WebSocket upgrades through the recorder.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("connection cannot be hijacked")
	}
	s.code = http.StatusSwitchingProtocols
	return h.Hijack()
}

func resourceList() *metav1.APIResourceList {
	all := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "watch"}
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: all, ShortNames: []string{"po"}},
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"create", "deletecollection"}, ShortNames: []string{"cm"}},
			{Name: "persistentvolumeclaims", SingularName: "persistentvolumeclaim", Namespaced: true, Kind: "PersistentVolumeClaim", Verbs: metav1.Verbs{"create", "list", "deletecollection"}, ShortNames: []string{"pvc"}},
			{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", Verbs: metav1.Verbs{"deletecollection"}, ShortNames: []string{"svc"}},
		},
	}
}

func sortPods(pods []corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
}

// isTrue parses a boolean query parameter as the API server does.
func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
