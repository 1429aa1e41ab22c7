// Package profiling adds Go's pprof endpoints to a mux.
// They serve the opt-in --profiling flag of the webhook and the sidecar.
package profiling
