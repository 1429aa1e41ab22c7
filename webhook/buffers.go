package webhook

import "sync"

// maxPooledBuffer bounds the buffers kept for reuse, so that one huge pod
// does not pin its answer's memory.
const maxPooledBuffer = 1 << 20

// buffers holds the byte slices an answer is encoded into: its JSON patch
// and the AdmissionReview around it, some KiB each, which are garbage as
// soon as the answer is written.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

// putBuffer keeps b, emptied, for another answer.
func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}
