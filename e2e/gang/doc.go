// Package gang tests gang scheduling of sparklet's drivers and executors
// with a real batch scheduler, Apache YuniKorn, on the local control plane.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then fails, rather
// than skips, if the binaries are missing.
package gang
