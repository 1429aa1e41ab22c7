package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

var resizeGR = schema.GroupResource{Resource: "pods/resize"}

// The sidecar resizes this application's executors itself when the JVM
// asks through pods/{name}/resize, as Spark 4.2's ExecutorResizePlugin
// does (patches.CheckExecutorResize): memory only, within the policy,
// the namespace's ResourceQuotas and the batch scheduler's accounting.

// serveResize answers a PATCH of pods/{name}/resize: it checks the asked
// memory and, when everything allows it, resizes the executor with its
// own credential. Refusals are 403 Statuses whose message Spark logs
// ("Failed to update <executor id>") and Warning Events on the driver pod.
func (a *API) serveResize(w http.ResponseWriter, req *request, namespace, name string) {
	if namespace != a.namespace {
		writeError(w, apierrors.NewForbidden(resizeGR, name, fmt.Errorf("this sidecar serves only namespace %q, the driver's", a.namespace)))
		return
	}
	if req.Method != http.MethodPatch {
		writeError(w, apierrors.NewMethodNotSupported(resizeGR, req.verb))
		return
	}
	if name == a.driver {
		writeError(w, apierrors.NewForbidden(resizeGR, name, fmt.Errorf("the sidecar resizes executors only, not the driver's own pod")))
		return
	}
	cached, err := a.state.executor(name)
	if err != nil {
		writeError(w, err)
		return
	}
	pod, err := cached.decode()
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	body, err := req.body()
	if err != nil {
		writeError(w, err)
		return
	}
	ask, err := parseResize(req.patchType(), body)
	if err == nil {
		err = a.checkResize(req, pod, ask)
	}
	if err != nil {
		a.refuseResize(w, name, err)
		return
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name": ask.container, "resources": map[string]any{
			"requests": map[string]string{"memory": ask.memory.String()},
			"limits":   map[string]string{"memory": ask.memory.String()}},
	}}}})
	out, err := a.client.Pods(a.namespace).Patch(req.Context(), name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager}, "resize")
	if err != nil {
		a.refuseResize(w, name, refusedByAPIServer(fmt.Sprintf("executor %q: the API server refused its resize to memory %s", name, ask.memory.String()), err))
		return
	}
	msg := fmt.Sprintf("executor %s resized to memory %s, as the driver asked", name, ask.memory.String())
	a.log.WithFields(logrus.Fields{"pod": name, "memory": ask.memory.String()}).Info("resized an executor")
	a.alloc.events.normal("ExecutorResized", msg)
	writeObject(w, http.StatusOK, withKind(out))
}

// refuseResize answers the JVM with a refused resize of the executor.
func (a *API) refuseResize(w http.ResponseWriter, name string, err error) {
	a.refuseGrowth(w, resizeGR, name, "ExecutorResizeRefused", err)
}

// refuseGrowth answers the JVM with the refusal of a resize of one
// object, a 403 unless the API server's own Status, logs it and reports
// it in a Warning Event (the recorder folds repeats, which Spark sends
// every interval of its resize plugin).
func (a *API) refuseGrowth(w http.ResponseWriter, gr schema.GroupResource, name, reason string, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		err = apierrors.NewForbidden(gr, name, err)
	}
	a.log.WithFields(logrus.Fields{"resource": gr.Resource, "name": name}).Warn("refused a resize: " + err.Error())
	a.alloc.events.warning(reason, err.Error())
	writeError(w, err)
}

// refusedByAPIServer says what the API server refused, keeping its
// Status code and reason: its own message names neither the size asked
// for nor, for a node whose kubelet cannot resize ("Pod running on node
// without support for resize"), what that means.
func refusedByAPIServer(what string, err error) error {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		return err
	}
	st := se.ErrStatus
	st.Message = what + ": " + st.Message
	return &apierrors.StatusError{ErrStatus: st}
}

// resizeAsk is what a resize patch asks: a container's memory.
type resizeAsk struct {
	container string
	memory    resource.Quantity
}

// parseResize reads the patch ExecutorResizePlugin sends: a strategic
// merge of a Pod whose only content is one container's memory request
// and limit, the two equal. fabric8 writes the Pod's apiVersion and kind
// too, and an empty metadata; other empty fields are let through.
func parseResize(pt types.PatchType, body []byte) (resizeAsk, error) {
	var ask resizeAsk
	if pt != types.StrategicMergePatchType && pt != types.MergePatchType {
		return ask, fmt.Errorf("patch type %q is not one Spark sends; use application/strategic-merge-patch+json", pt)
	}
	var pod map[string]json.RawMessage
	if err := json.Unmarshal(body, &pod); err != nil {
		return ask, fmt.Errorf("the patch is not a JSON object: %w", err)
	}
	if err := onlyFields(pod, podResizeChange, "", "spec", "apiVersion", "kind"); err != nil {
		return ask, err
	}
	for k, want := range podType {
		if v, ok := pod[k]; ok && string(v) != strconv.Quote(want) {
			return ask, fmt.Errorf("%s %s is refused", k, v)
		}
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(pod["spec"], &spec); err != nil || spec == nil {
		return ask, fmt.Errorf("the patch has no spec.containers")
	}
	if err := onlyFields(spec, podResizeChange, "spec.", "containers"); err != nil {
		return ask, err
	}
	var containers []map[string]json.RawMessage
	if err := json.Unmarshal(spec["containers"], &containers); err != nil || len(containers) != 1 {
		return ask, fmt.Errorf("a resize names one container, the executor's Spark container")
	}
	if err := onlyFields(containers[0], podResizeChange, "spec.containers[].", "name", "resources"); err != nil {
		return ask, err
	}
	var typed []corev1.Container
	if err := json.Unmarshal(spec["containers"], &typed); err != nil {
		return ask, fmt.Errorf("spec.containers: %w", err)
	}
	c := typed[0]
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for r := range rl {
			if r != corev1.ResourceMemory {
				return ask, fmt.Errorf("the sidecar resizes executors' memory only, not %s", r)
			}
		}
	}
	req, rok := c.Resources.Requests[corev1.ResourceMemory]
	lim, lok := c.Resources.Limits[corev1.ResourceMemory]
	if !rok || !lok || req.Cmp(lim) != 0 {
		return ask, fmt.Errorf("container %q: resources.requests.memory and resources.limits.memory must both be set and equal, "+
			"as Spark sizes executors", c.Name)
	}
	return resizeAsk{container: c.Name, memory: lim}, nil
}

// podResizeChange is what a pod resize may change.
const podResizeChange = "a resize changes spec.containers[].resources only"

// onlyFields refuses a field of obj (at the path at) outside allowed
// unless its value is empty (null, {}, [] or ""), saying that the patch
// may make only change.
func onlyFields(obj map[string]json.RawMessage, change, at string, allowed ...string) error {
	for k, v := range obj {
		if slices.Contains(allowed, k) {
			continue
		}
		switch strings.TrimSpace(string(v)) {
		case "null", "{}", "[]", `""`:
			continue
		}
		return fmt.Errorf("%s, not %s%s", change, at, k)
	}
	return nil
}

// checkResize checks the ask against the node, the batch scheduler, the
// policy and the namespace's ResourceQuotas.
func (a *API) checkResize(req *request, pod *corev1.Pod, ask resizeAsk) error {
	if c, ok := infeasibleResize(pod); ok {
		return fmt.Errorf("executor %q: its node cannot resize it in place (%s %s: %s)", pod.Name, c.Type, c.Reason, c.Message)
	}
	if d := a.alloc.driver; d != nil && d.Scheduling != nil {
		switch s := d.Scheduling.Scheduler; s {
		case policy.SchedulerKueue, policy.SchedulerYuniKorn:
			return fmt.Errorf("executor %q: it runs under the batch scheduler %s, which counts it at the size it was admitted with; "+
				"a resize in place would leave the queue's accounting wrong, so executors of %s are not resized", pod.Name, s, s)
		}
	}
	if err := patches.CheckExecutorResize(pod, ask.container, ask.memory, a.alloc.policy); err != nil {
		return err
	}
	return a.quotaHeadroom(req, pod, ask)
}

// infeasibleResize returns the kubelet's PodResizePending condition when
// it says the node can never give the pod what it asked for.
func infeasibleResize(pod *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}
