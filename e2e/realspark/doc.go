// Package realspark runs stock Spark JVMs through the webhook and the sidecar.
//
// The pinned distributions of hack/spark/versions play the
// apache/spark images, and the pod runner plays the kubelet. It runs when
// SPARKLET_E2E=1 (make test sets it), as root, and then fails, rather than
// skips, if a binary or a distribution is missing.
package realspark
