// Package webhook is sparklet's mutating admission webhook for driver pods.
// It is a thin adapter that turns an AdmissionReview for a pod into
// patches.Driver's result.
package webhook
