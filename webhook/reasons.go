package webhook

import (
	"regexp"
	"strings"

	"github.com/sparklet/sparklet/patches"
)

// The reason label of sparklet_admissions_total: a fixed set of snake_case
// values, never free text, so that a dashboard can list them and the
// series stay few.
const (
	reasonNone            = "none" // with result injected
	reasonNotPodCreate    = "not_pod_create"
	reasonNotDriver       = "not_driver"
	reasonOptedOut        = "opted_out"
	reasonAlreadyInjected = "already_injected"
	reasonOther           = "other"
	reasonPanic           = "panic"
	reasonBadPod          = "bad_pod"
	reasonEncodePatch     = "encode_patch"
)

// skipReason maps patches.Driver's skip message to its reason.
func skipReason(msg string) string {
	switch {
	case strings.HasPrefix(msg, "not labelled "+patches.LabelRole):
		return reasonNotDriver
	case strings.HasPrefix(msg, "opted out"):
		return reasonOptedOut
	}
	return reasonOther
}

var refusalCode = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// refusalReason is a patches.Refused reason (a constant in the code, such
// as "image-not-allowed") in snake_case; anything else is "other".
func refusalReason(r string) string {
	if !refusalCode.MatchString(r) {
		return reasonOther
	}
	return strings.ReplaceAll(r, "-", "_")
}
