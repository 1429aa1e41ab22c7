package profiling

import (
	"net/http"
	"net/http/pprof"
)

// Register serves /debug/pprof/ on mux: the index, cmdline, profile
// (CPU), symbol and trace, and through the index the heap, allocs,
// goroutine and other runtime profiles.
func Register(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
