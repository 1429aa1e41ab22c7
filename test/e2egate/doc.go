// Package e2egate decides which end-to-end tests run: it skips a test that
// needs the binaries of the local control plane unless the end-to-end tests
// were asked for, says whether e2e/node runs its real node, and skips a
// pod runner test whose claim the real node proves in the same run.
package e2egate
