package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	// Query is the raw query string, as sent.
	Query     string
	Header    http.Header
	Body      []byte
	WebSocket bool // an upgrade request
}

// String is "METHOD path?query".
func (r Request) String() string {
	s := r.Method + " " + r.Path
	if r.Query != "" {
		s += "?" + r.Query
	}
	return s
}

// Fault answers matching requests with Code, Times times (0: always).
type Fault struct {
	Method string // empty matches any
	// Path matches when the request path ends with it; empty matches any.
	Path       string
	WebSocket  bool // match only upgrade requests
	Code       int
	Times      int
	RetryAfter string
}

// API is the fake server; use it as an http.Handler.
type API struct {
	// Token, if set, is the bearer token every request must carry.
	Token string
	// AutoRun moves every created pod to Running at once, as kwok does.
	AutoRun bool

	mu            sync.Mutex
	upgradeStatus int
	rv            int
	objects       map[key]*object
	history       []event
	watches       map[*watch]struct{}
	requests      []Request
	faults        []*Fault
}

type key struct{ resource, namespace, name string }

type object struct {
	pod *corev1.Pod
	raw map[string]any // non-pod objects, with metadata
}

type event struct {
	rv       int
	typ      string
	resource string
	ns       string
	obj      []byte
	labels   labels.Set
	fields   fields.Set
}

type watch struct {
	resource, ns string
	label        labels.Selector
	field        fields.Selector
	ch           chan []byte
	done         chan struct{}
	once         sync.Once
}

func (w *watch) stop() { w.once.Do(func() { close(w.done) }) }

// New returns an empty API.
func New() *API {
	return &API{objects: map[key]*object{}, watches: map[*watch]struct{}{}}
}

// Requests returns the recorded requests.
func (a *API) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// ResetRequests forgets the recorded requests.
func (a *API) ResetRequests() {
	a.mu.Lock()
	a.requests = nil
	a.mu.Unlock()
}

// AddFault injects a fault.
func (a *API) AddFault(f Fault) {
	a.mu.Lock()
	a.faults = append(a.faults, &f)
	a.mu.Unlock()
}

// AddPod stores a pod as if created, with uid, resourceVersion and phase
// Pending unless set.
func (a *API) AddPod(p *corev1.Pod) *corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	p = p.DeepCopy()
	a.prepare(&p.ObjectMeta, p.Namespace)
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
	p.APIVersion, p.Kind = "v1", "Pod"
	a.putPod(p, "ADDED")
	return p.DeepCopy()
}

// Pod returns a stored pod or nil.
func (a *API) Pod(ns, name string) *corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	if o := a.objects[key{"pods", ns, name}]; o != nil {
		return o.pod.DeepCopy()
	}
	return nil
}

// Pods lists the stored pods of ns matching a label selector ("" for all).
func (a *API) Pods(ns, selector string) []*corev1.Pod {
	sel, err := labels.Parse(selector)
	if err != nil {
		panic(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*corev1.Pod
	for k, o := range a.objects {
		if k.resource == "pods" && k.namespace == ns && sel.Matches(labels.Set(o.pod.Labels)) {
			out = append(out, o.pod.DeepCopy())
		}
	}
	slices.SortFunc(out, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Count returns how many objects of resource are stored in ns.
func (a *API) Count(resource, ns string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for k := range a.objects {
		if k.resource == resource && k.namespace == ns {
			n++
		}
	}
	return n
}

// SetPhase changes a pod's phase and sends MODIFIED.
func (a *API) SetPhase(ns, name string, phase corev1.PodPhase) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.objects[key{"pods", ns, name}]
	if o == nil {
		return fmt.Errorf("pod %s/%s not found", ns, name)
	}
	p := o.pod.DeepCopy()
	p.Status.Phase = phase
	if phase == corev1.PodRunning {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	a.rv++
	p.ResourceVersion = strconv.Itoa(a.rv)
	a.putPod(p, "MODIFIED")
	return nil
}

// WatchError sends an ERROR event with code to every open watch and ends
// them; it returns how many watches it reached.
func (a *API) WatchError(code int32) int {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: code, Message: fmt.Sprintf("injected watch error %d", code)}
	if code == http.StatusGone {
		st.Reason = metav1.StatusReasonExpired
		st.Message = "too old resource version"
	}
	obj, _ := json.Marshal(st)
	msg, _ := json.Marshal(map[string]any{"type": "ERROR", "object": json.RawMessage(obj)})
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for w := range a.watches {
		select {
		case w.ch <- msg:
		default:
		}
		close(w.ch)
		delete(a.watches, w)
		n++
	}
	return n
}

// OpenWatches counts the watches being served.
func (a *API) OpenWatches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.watches)
}

// prepare fills server-set metadata; callers hold a.mu.
func (a *API) prepare(m *metav1.ObjectMeta, ns string) {
	a.rv++
	m.Namespace = ns
	m.ResourceVersion = strconv.Itoa(a.rv)
	if m.UID == "" {
		m.UID = types.UID(fmt.Sprintf("uid-%d", a.rv))
	}
	if m.CreationTimestamp.IsZero() {
		m.CreationTimestamp = metav1.NewTime(time.Now())
	}
}

// putPod stores p (rv already set) and notifies watches; callers hold a.mu.
func (a *API) putPod(p *corev1.Pod, typ string) {
	k := key{"pods", p.Namespace, p.Name}
	if typ == "DELETED" {
		delete(a.objects, k)
	} else {
		a.objects[k] = &object{pod: p}
	}
	raw, _ := json.Marshal(p)
	rv, _ := strconv.Atoi(p.ResourceVersion)
	a.notify(event{rv: rv, typ: typ, resource: "pods", ns: p.Namespace, obj: raw, labels: p.Labels, fields: podFields(p)})
}

func podFields(p *corev1.Pod) fields.Set {
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "status.phase": string(p.Status.Phase), "spec.nodeName": p.Spec.NodeName}
}

func (a *API) notify(e event) {
	a.history = append(a.history, e)
	msg, _ := json.Marshal(map[string]any{"type": e.typ, "object": json.RawMessage(e.obj)})
	for w := range a.watches {
		if w.matches(e) {
			select {
			case w.ch <- msg:
			default:
				// A stuck watcher is dropped, as the API server does.
				close(w.ch)
				delete(a.watches, w)
			}
		}
	}
}

func (w *watch) matches(e event) bool {
	return e.resource == w.resource && (w.ns == "" || e.ns == w.ns) && w.label.Matches(e.labels) && w.field.Matches(e.fields)
}

func (a *API) record(r *http.Request, body []byte) *Fault {
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	a.requests = append(a.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, WebSocket: ws})
	for i, f := range a.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.HasSuffix(r.URL.Path, f.Path) && (!f.WebSocket || ws) {
			if f.Times > 0 {
				f.Times--
				if f.Times == 0 {
					a.faults = slices.Delete(a.faults, i, i+1)
				}
			}
			return f
		}
	}
	return nil
}

// ServeHTTP serves /api/v1/namespaces/{ns}/{resource}[/{name}].
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if f := a.record(r, body); f != nil {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		status(w, &apierrors.NewGenericServerResponse(f.Code, r.Method, schema.GroupResource{Resource: "pods"}, "", "injected fault", 0, false).ErrStatus)
		return
	}
	if a.Token != "" && r.Header.Get("Authorization") != "Bearer "+a.Token {
		status(w, &apierrors.NewUnauthorized("bearer token required").ErrStatus)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") || len(parts) < 2 || len(parts) > 3 {
		status(w, &apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path).ErrStatus)
		return
	}
	ns, resource := parts[0], parts[1]
	switch resource {
	case "pods", "configmaps", "persistentvolumeclaims", "services":
	default:
		status(w, &apierrors.NewNotFound(schema.GroupResource{Resource: resource}, "").ErrStatus)
		return
	}
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		status(w, &apierrors.NewBadRequest("labelSelector: "+err.Error()).ErrStatus)
		return
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		status(w, &apierrors.NewBadRequest("fieldSelector: "+err.Error()).ErrStatus)
		return
	}
	if len(parts) == 3 {
		a.serveNamed(w, r, ns, resource, parts[2], body)
		return
	}
	switch {
	case r.Method == http.MethodGet && q.Get("watch") == "true":
		a.serveWatch(w, r, ns, resource, ls, fs, q)
	case r.Method == http.MethodGet:
		a.serveList(w, ns, resource, ls, fs)
	case r.Method == http.MethodPost:
		a.serveCreate(w, ns, resource, body)
	case r.Method == http.MethodDelete:
		a.serveDeleteCollection(w, ns, resource, ls, fs, body)
	default:
		status(w, &apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, r.Method).ErrStatus)
	}
}

func status(w http.ResponseWriter, st *metav1.Status) {
	st.APIVersion, st.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

func write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func kindOf(resource string) string {
	return map[string]string{"pods": "Pod", "configmaps": "ConfigMap", "persistentvolumeclaims": "PersistentVolumeClaim", "services": "Service"}[resource]
}

// objectJSON renders a stored object; callers hold a.mu.
func (o *object) json() map[string]any {
	if o.pod != nil {
		b, _ := json.Marshal(o.pod)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	return o.raw
}

func (o *object) meta() (labels.Set, fields.Set) {
	if o.pod != nil {
		return o.pod.Labels, podFields(o.pod)
	}
	md, _ := o.raw["metadata"].(map[string]any)
	ls := labels.Set{}
	if l, ok := md["labels"].(map[string]any); ok {
		for k, v := range l {
			ls[k], _ = v.(string)
		}
	}
	name, _ := md["name"].(string)
	return ls, fields.Set{"metadata.name": name}
}

func (a *API) matching(ns, resource string, ls labels.Selector, fs fields.Selector) []key {
	var out []key
	for k, o := range a.objects {
		if k.resource != resource || k.namespace != ns {
			continue
		}
		l, f := o.meta()
		if ls.Matches(l) && fs.Matches(f) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(x, y key) int { return strings.Compare(x.name, y.name) })
	return out
}

func (a *API) serveList(w http.ResponseWriter, ns, resource string, ls labels.Selector, fs fields.Selector) {
	a.mu.Lock()
	items := []any{}
	for _, k := range a.matching(ns, resource, ls, fs) {
		items = append(items, a.objects[k].json())
	}
	rv := strconv.Itoa(a.rv)
	a.mu.Unlock()
	write(w, http.StatusOK, map[string]any{"apiVersion": "v1", "kind": kindOf(resource) + "List", "metadata": map[string]any{"resourceVersion": rv}, "items": items})
}

func (a *API) serveCreate(w http.ResponseWriter, ns, resource string, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if resource == "pods" {
		var p corev1.Pod
		if err := json.Unmarshal(body, &p); err != nil || p.Name == "" {
			status(w, &apierrors.NewBadRequest(fmt.Sprintf("pod body: name required (%v)", err)).ErrStatus)
			return
		}
		if a.objects[key{"pods", ns, p.Name}] != nil {
			status(w, &apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, p.Name).ErrStatus)
			return
		}
		a.prepare(&p.ObjectMeta, ns)
		p.APIVersion, p.Kind = "v1", "Pod"
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		a.putPod(&p, "ADDED")
		out := p.DeepCopy()
		if a.AutoRun {
			r := p.DeepCopy()
			a.rv++
			r.ResourceVersion = strconv.Itoa(a.rv)
			r.Status.Phase = corev1.PodRunning
			r.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			a.putPod(r, "MODIFIED")
		}
		write(w, http.StatusCreated, out)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		status(w, &apierrors.NewBadRequest("body: "+err.Error()).ErrStatus)
		return
	}
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if name == "" {
		status(w, &apierrors.NewBadRequest("metadata.name required").ErrStatus)
		return
	}
	k := key{resource, ns, name}
	if a.objects[k] != nil {
		status(w, &apierrors.NewAlreadyExists(schema.GroupResource{Resource: resource}, name).ErrStatus)
		return
	}
	var meta metav1.ObjectMeta
	a.prepare(&meta, ns)
	md["namespace"], md["resourceVersion"], md["uid"] = ns, meta.ResourceVersion, string(meta.UID)
	md["creationTimestamp"] = meta.CreationTimestamp.UTC().Format(time.RFC3339)
	m["apiVersion"], m["kind"] = "v1", kindOf(resource)
	a.objects[k] = &object{raw: m}
	write(w, http.StatusCreated, m)
}

func (a *API) serveDeleteCollection(w http.ResponseWriter, ns, resource string, ls labels.Selector, fs fields.Selector, body []byte) {
	if len(body) > 0 {
		var opts metav1.DeleteOptions
		if err := json.Unmarshal(body, &opts); err != nil {
			status(w, &apierrors.NewBadRequest("DeleteOptions: "+err.Error()).ErrStatus)
			return
		}
	}
	a.mu.Lock()
	items := []any{}
	for _, k := range a.matching(ns, resource, ls, fs) {
		items = append(items, a.delete(k))
	}
	rv := strconv.Itoa(a.rv)
	a.mu.Unlock()
	write(w, http.StatusOK, map[string]any{"apiVersion": "v1", "kind": kindOf(resource) + "List", "metadata": map[string]any{"resourceVersion": rv}, "items": items})
}

// delete removes k at once (no graceful termination); callers hold a.mu.
func (a *API) delete(k key) map[string]any {
	o := a.objects[k]
	if o.pod != nil {
		p := o.pod.DeepCopy()
		a.rv++
		p.ResourceVersion = strconv.Itoa(a.rv)
		a.putPod(p, "DELETED")
		return (&object{pod: p}).json()
	}
	delete(a.objects, k)
	return o.raw
}

func (a *API) serveNamed(w http.ResponseWriter, r *http.Request, ns, resource, name string, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := key{resource, ns, name}
	o := a.objects[k]
	if o == nil {
		status(w, &apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name).ErrStatus)
		return
	}
	switch r.Method {
	case http.MethodGet:
		write(w, http.StatusOK, o.json())
	case http.MethodDelete:
		write(w, http.StatusOK, a.delete(k))
	case http.MethodPatch:
		if o.pod == nil {
			status(w, &apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, "patch").ErrStatus)
			return
		}
		cur, _ := json.Marshal(o.pod)
		var out []byte
		var err error
		switch ct := r.Header.Get("Content-Type"); {
		case strings.HasPrefix(ct, "application/json-patch+json"):
			var p jsonpatch.Patch
			if p, err = jsonpatch.DecodePatch(body); err == nil {
				out, err = p.Apply(cur)
			}
		case strings.HasPrefix(ct, "application/merge-patch+json"), strings.HasPrefix(ct, "application/strategic-merge-patch+json"):
			out, err = jsonpatch.MergePatch(cur, body)
		default:
			status(w, &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
				Reason: metav1.StatusReasonUnsupportedMediaType, Message: "the body of the request was in an unknown format: " + ct})
			return
		}
		if err != nil {
			status(w, &apierrors.NewBadRequest("patch: "+err.Error()).ErrStatus)
			return
		}
		var p corev1.Pod
		if err := json.Unmarshal(out, &p); err != nil {
			status(w, &apierrors.NewBadRequest("patched pod: "+err.Error()).ErrStatus)
			return
		}
		// A resourceVersion in the patched object is a precondition.
		if p.ResourceVersion != "" && p.ResourceVersion != o.pod.ResourceVersion {
			status(w, &apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, name,
				fmt.Errorf("the object has been modified; resourceVersion %s is not %s", p.ResourceVersion, o.pod.ResourceVersion)).ErrStatus)
			return
		}
		a.rv++
		p.ResourceVersion = strconv.Itoa(a.rv)
		a.putPod(&p, "MODIFIED")
		write(w, http.StatusOK, &p)
	default:
		status(w, &apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, r.Method).ErrStatus)
	}
}

// SetUpgradeStatus makes WebSocket upgrades answer code instead of
// switching protocols (0 switches again); HTTP watches are still served.
func (a *API) SetUpgradeStatus(code int) {
	a.mu.Lock()
	a.upgradeStatus = code
	a.mu.Unlock()
}

func (a *API) serveWatch(w http.ResponseWriter, r *http.Request, ns, resource string, ls labels.Selector, fs fields.Selector, q url.Values) {
	if resource != "pods" {
		status(w, &apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, "watch").ErrStatus)
		return
	}
	ws := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	a.mu.Lock()
	upgrade := a.upgradeStatus
	a.mu.Unlock()
	if ws && upgrade != 0 {
		if upgrade == http.StatusOK {
			write(w, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
			return
		}
		status(w, &apierrors.NewGenericServerResponse(upgrade, "GET", schema.GroupResource{Resource: resource}, "", "websocket refused", 0, false).ErrStatus)
		return
	}
	wt := &watch{resource: resource, ns: ns, label: ls, field: fs, ch: make(chan []byte, 4096), done: make(chan struct{})}
	a.mu.Lock()
	var backlog [][]byte
	since := q.Get("resourceVersion")
	if since == "" || since == "0" {
		for _, k := range a.matching(ns, resource, ls, fs) {
			b, _ := json.Marshal(map[string]any{"type": "ADDED", "object": a.objects[k].json()})
			backlog = append(backlog, b)
		}
	} else {
		from, err := strconv.Atoi(since)
		if err != nil {
			a.mu.Unlock()
			status(w, &apierrors.NewBadRequest("resourceVersion: "+err.Error()).ErrStatus)
			return
		}
		for _, e := range a.history {
			if e.rv > from && wt.matches(e) {
				b, _ := json.Marshal(map[string]any{"type": e.typ, "object": json.RawMessage(e.obj)})
				backlog = append(backlog, b)
			}
		}
	}
	a.watches[wt] = struct{}{}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if _, ok := a.watches[wt]; ok {
			delete(a.watches, wt)
			close(wt.ch)
		}
		a.mu.Unlock()
	}()
	var timeout <-chan time.Time
	if s, _ := strconv.Atoi(q.Get("timeoutSeconds")); s > 0 {
		t := time.NewTimer(time.Duration(s) * time.Second)
		defer t.Stop()
		timeout = t.C
	}
	stream := func(send func([]byte) error) {
		for _, b := range backlog {
			if send(b) != nil {
				return
			}
		}
		for {
			select {
			case b, ok := <-wt.ch:
				if !ok || send(b) != nil {
					return
				}
			case <-timeout:
				return
			case <-wt.done:
				return
			case <-r.Context().Done():
				return
			}
		}
	}
	if ws {
		srv := websocket.Server{
			Handshake: func(*websocket.Config, *http.Request) error { return nil },
			Handler: func(c *websocket.Conn) {
				go func() {
					// Read until the client closes, then end the stream.
					var m string
					for websocket.Message.Receive(c, &m) == nil {
					}
					wt.stop()
				}()
				stream(func(b []byte) error { return websocket.Message.Send(c, string(b)) })
			},
		}
		srv.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	stream(func(b []byte) error {
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	})
}
