package sidecar

import "runtime/debug"

// GCPercent is the sidecar's GOGC unless the GOGC env var sets one. The
// sidecar's live heap is small (the cached executors' JSON and a slim pod
// each, a few MiB per 1000 executors) and it allocates little once the
// executors run, so collecting when the heap has grown by a quarter
// rather than doubled keeps its footprint near its live data for a few
// milliseconds of CPU per collection. GOMEMLIMIT, set from the container's
// memory limit, still bounds the heap.
const GCPercent = 25

// SetGCPercent applies GCPercent unless lookup finds GOGC set.
func SetGCPercent(lookup func(string) (string, bool)) {
	if _, ok := lookup("GOGC"); ok {
		return
	}
	debug.SetGCPercent(GCPercent)
}
