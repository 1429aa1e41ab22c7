package patches

import (
	"github.com/sparklet/sparklet/policy"
)

// Input is everything a driver pod is patched with besides the pod itself.
type Input struct {
	// Namespace is the namespace the pod is created in; a pod from a
	// template may not carry it yet.
	Namespace string
	Policy    *policy.Effective
	// PolicyJSON, when set, is Policy as JSON, for the sidecar; a caller
	// that keeps it saves encoding it for every pod.
	PolicyJSON []byte
	// Version is recorded in the status annotation.
	Version string
	// AppID, when set, is used instead of a generated application id for a
	// pod that has none (tests and offline rendering use it).
	AppID string
	// Template marks a workload's pod template rendered offline: it gets
	// no application id, so that each pod created from it gets its own
	// from the webhook.
	Template bool
}

// Refused is returned when policy forbids a pod. Its message names the field
// and what the user can do about it.
type Refused struct {
	Reason  string // short machine-readable reason, e.g. "image-not-allowed"
	Message string
	// Field, when set, is the pod field at fault in an executor refusal
	// (fieldCPURequest, ..., or volumeField's), which admission traces
	// back to the Spark keys that set it.
	Field string
}

func (r *Refused) Error() string { return r.Message }
