// Package patches is the pure mutation of driver and executor pods.
// It injects sparklet into a driver pod and applies the executor policy to
// executor pods, as ordered steps over *corev1.Pod and the policy, with no
// HTTP, admission types or logging.
package patches
