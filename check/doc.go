// Package check answers, for `sparklet check`, whether a namespace's or a
// pod's driver pods would be injected, by which webhook and policy, and if
// not, why; for an injected driver it shows the sidecar's state, the
// executors by phase and the last Events. It reads the cluster and never
// writes to it.
package check
