package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// The driver's only write to its own pod is Spark's exit-exception
// annotation (spark.kubernetes.driver.annotateExitException, 4.1+): when
// the application's main method throws, SparkSubmit patches the driver pod
// with the annotation spark.exit-exception. The 4.3.0 jar sends a
// strategic-merge patch of a Pod that has only that annotation
// (SparkKubernetesDiagnosticsSetter, PatchType.STRATEGIC_MERGE); earlier
// revisions of the same class used fabric8's edit, a JSON patch of the
// difference. Both are accepted; any other change is refused.
var exitExceptionPath = "/metadata/annotations/" + escapePointer(vocab.AnnotationExitException)

// patchDriver forwards the driver's exit-exception annotation to its own
// pod, and refuses any other patch of that pod.
func (a *API) patchDriver(w http.ResponseWriter, req *request) {
	body, err := req.body()
	if err != nil {
		writeError(w, err)
		return
	}
	pt := req.patchType()
	if err := checkExitExceptionPatch(pt, body); err != nil {
		a.refuseDriverPatch(w, req, err)
		return
	}
	if exitExceptionOff(a.alloc.driver) {
		a.refuseDriverPatch(w, req, fmt.Errorf("%s is false in the driver's effective configuration", patches.KeyAnnotateExitException))
		return
	}
	pod, err := a.client.Pods(a.namespace).Patch(req.Context(), req.name, pt, body, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		writeError(w, err)
		return
	}
	a.log.WithField("pod", req.name).Info("the driver annotated its pod with the exception that ended it")
	writeObject(w, http.StatusOK, withKind(pod))
}

// refuseDriverPatch answers 403 and logs it: SparkSubmit logs a failed
// annotation only at debug level.
func (a *API) refuseDriverPatch(w http.ResponseWriter, req *request, why error) {
	a.log.WithFields(logrus.Fields{"pod": req.name, "patchType": string(req.patchType())}).Warn("refused a patch of the driver pod: " + why.Error())
	writeError(w, apierrors.NewForbidden(podsGR, req.name, fmt.Errorf(
		"the driver may patch only the annotation %s on its own pod (%s): %w",
		vocab.AnnotationExitException, patches.KeyAnnotateExitException, why)))
}

// exitExceptionOff tells whether the driver's effective configuration,
// as the webhook recorded it, turns the annotation off.
func exitExceptionOff(driver *patches.DriverFacts) bool {
	if driver == nil || driver.ConfErr != nil {
		return false
	}
	v, ok := driver.Conf[patches.KeyAnnotateExitException]
	on, perr := strconv.ParseBool(v)
	return ok && perr == nil && !on
}

// checkExitExceptionPatch allows a patch that sets the exit-exception
// annotation and nothing else.
func checkExitExceptionPatch(pt types.PatchType, body []byte) error {
	switch pt {
	case types.MergePatchType, types.StrategicMergePatchType:
		return checkExitExceptionMerge(body)
	case types.JSONPatchType:
		return checkExitExceptionJSONPatch(body)
	}
	return fmt.Errorf("patch type %q is not one Spark sends; use application/strategic-merge-patch+json", pt)
}

// podType is the type fabric8 writes in a Pod it serializes.
var podType = map[string]string{"apiVersion": "v1", "kind": "Pod"}

func checkExitExceptionMerge(body []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return fmt.Errorf("the patch is not a JSON object: %w", err)
	}
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind": // fabric8 serializes the Pod's type
			var s string
			if json.Unmarshal(v, &s) != nil || s != podType[k] {
				return fmt.Errorf("%s %s is refused", k, v)
			}
		case "metadata":
		default:
			return fmt.Errorf("a change of %s is refused", k)
		}
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return fmt.Errorf("the patch sets no metadata.annotations")
	}
	for k := range meta {
		if k != "annotations" {
			return fmt.Errorf("a change of metadata.%s is refused", k)
		}
	}
	var annotations map[string]*string
	if err := json.Unmarshal(meta["annotations"], &annotations); err != nil {
		return fmt.Errorf("metadata.annotations: %w", err)
	}
	for k, v := range annotations {
		if k != vocab.AnnotationExitException {
			return fmt.Errorf("a change of annotation %s is refused", k)
		}
		if v == nil {
			return fmt.Errorf("removing annotation %s is refused", k)
		}
	}
	if len(annotations) == 0 {
		return fmt.Errorf("the patch sets no annotation %s", vocab.AnnotationExitException)
	}
	return nil
}

func checkExitExceptionJSONPatch(body []byte) error {
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &ops); err != nil {
		return fmt.Errorf("json patch: %w", err)
	}
	set := false
	for _, op := range ops {
		switch {
		case op.Path == "/metadata/resourceVersion" && slices.Contains([]string{"test", "replace"}, op.Op):
			// the optimistic lock fabric8's edit adds
		case op.Path == exitExceptionPath && (op.Op == "add" || op.Op == "replace"):
			var s string
			if err := json.Unmarshal(op.Value, &s); err != nil {
				return fmt.Errorf("%s %s: the value must be a string", op.Op, op.Path)
			}
			set = true
		default:
			return fmt.Errorf("%s %s is refused", op.Op, op.Path)
		}
	}
	if !set {
		return fmt.Errorf("the patch sets no annotation %s", vocab.AnnotationExitException)
	}
	return nil
}
