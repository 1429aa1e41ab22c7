// Package e2egate skips a test that needs the binaries of the local
// control plane unless the end-to-end tests were asked for.
package e2egate
