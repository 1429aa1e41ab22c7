// Package podpatch computes the JSON patch that admission answers for a pod.
// The patch goes from the pod as it was sent to the pod sparklet made of
// it, without losing fields our Pod type does not know.
package podpatch
