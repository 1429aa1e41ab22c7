// Package sparkimage maps the images of Spark pods to this machine.
// The pod runner, which has no container runtime, runs apache/spark images
// from the pinned Spark distributions in BIN_DIR/spark
// (hack/spark/install.sh), with the image's entrypoint played in Go, and
// the sparklet image from BIN_DIR/sparklet.
package sparkimage
