package webhook

// GCPercent is the webhook's GOGC unless the GOGC env var sets one. Its
// live heap is small (the policy, the certificate, the informers' few
// objects) and each admission allocates 70–120 KiB that is garbage once
// it is answered, so at Go's default of 100 the collector runs every few
// hundred admissions. Collecting when the heap has grown fourfold instead
// answered 1.66× the admissions per second at concurrency 16 in the
// bench's webhook section, for 27 MiB more peak RSS (49 → 76 MiB).
// GOMEMLIMIT, which the chart sets from the container's memory limit,
// still bounds the heap.
const GCPercent = 400
