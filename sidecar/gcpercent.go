package sidecar

// GCPercent is the sidecar's GOGC unless the GOGC env var sets one. The
// sidecar's live heap is small (each cached executor's JSON and the few
// fields it reads, about 5 KiB an executor) and it allocates little once
// the executors run, so collecting when the heap has grown by a tenth
// rather than doubled keeps its footprint near its live data, for well
// under a CPU second more per 1000 executors in the bench's sidecar
// section. GOMEMLIMIT, set from the container's memory limit, still
// bounds the heap.
const GCPercent = 10
