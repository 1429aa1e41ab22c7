package gcpercent

import "runtime/debug"

// Set applies percent as the GC percent unless lookup finds GOGC set.
func Set(percent int, lookup func(string) (string, bool)) {
	if _, ok := lookup("GOGC"); ok {
		return
	}
	debug.SetGCPercent(percent)
}
