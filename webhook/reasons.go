package webhook

import (
	"regexp"
	"strings"
)

// The reason label of sparklet_admissions_total: a fixed set of snake_case
// values, never free text, so that a dashboard can list them and the
// series stay few.
const (
	reasonNone            = "none" // with result injected
	reasonNotPodCreate    = "not_pod_create"
	reasonAlreadyInjected = "already_injected"
	reasonOther           = "other"
	reasonPanic           = "panic"
	reasonBadPod          = "bad_pod"
	reasonEncodePatch     = "encode_patch"
	reasonNoPolicy        = "no_policy"
	// A skipped pod's reason is patches.Skip's, one of the Skip* constants.
)

var refusalCode = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// refusalReason is a patches.Refused reason (a constant in the code, such
// as "image-not-allowed") in snake_case; anything else is "other".
func refusalReason(r string) string {
	if !refusalCode.MatchString(r) {
		return reasonOther
	}
	return strings.ReplaceAll(r, "-", "_")
}
