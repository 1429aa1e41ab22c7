package sidecar

import (
	"runtime/debug"
	"testing"
)

func TestSetGCPercentYieldsToGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	SetGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, GCPercent)
	}
	SetGCPercent(func(name string) (string, bool) { return "100", name == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100: GC percent %d, want it left at 100", got)
	}
}
