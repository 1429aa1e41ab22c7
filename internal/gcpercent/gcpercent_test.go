package gcpercent

import (
	"runtime/debug"
	"testing"
)

func TestSetYieldsToGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	Set(37, func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != 37 {
		t.Errorf("without GOGC: GC percent %d, want 37", got)
	}
	Set(37, func(name string) (string, bool) { return "100", name == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100: GC percent %d, want the runtime's 100", got)
	}
}
