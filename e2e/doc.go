// Package e2e tests sparklet through the local control plane's admission chain.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then
// fails, rather than skips, if the binaries are missing.
package e2e
