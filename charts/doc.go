// Package charts tests the Helm chart in charts/sparklet.
// The tests lint it, render it with several value sets and check the
// objects, and apply them to the local control plane. They run with
// SPARKLET_E2E=1 and helm in SPARKLET_BIN_DIR (make test).
package charts
