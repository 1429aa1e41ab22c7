// Package queue tests sparklet's drivers and executors under a real batch
// scheduler's queues on the local control plane: Kueue, built by
// hack/kueue/build.sh, with its pod webhooks called by the API server.
//
// It runs when SPARKLET_E2E=1 (make test sets it) and then fails, rather
// than skips, if a binary is missing.
package queue
