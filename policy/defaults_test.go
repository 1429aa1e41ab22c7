package policy

import (
	"encoding/json"
	"testing"
)

// An effective policy decoded from JSON that leaves the sidecar out gets
// the same built-in values as a parsed policy.
func TestSidecarSetDefaultsOnDecodedEffective(t *testing.T) {
	var e Effective
	if err := json.Unmarshal([]byte(`{"namespace":"spark"}`), &e); err != nil {
		t.Fatal(err)
	}
	e.Sidecar.SetDefaults("dev")
	if want := Default("dev").For("spark").Sidecar; e.Sidecar.CreateQPS != want.CreateQPS || e.Sidecar.CreateConcurrency != want.CreateConcurrency ||
		e.Sidecar.Port != want.Port || e.Sidecar.TokenExpirationSeconds != want.TokenExpirationSeconds ||
		e.Sidecar.ExecutorScheduleDeadlineSeconds != DefaultScheduleDeadline {
		t.Errorf("defaults = %+v, want %+v", e.Sidecar, want)
	}
	if e.Sidecar.CreateQPS != DefaultCreateQPS || e.Sidecar.CreateConcurrency != DefaultCreateConcurrency {
		t.Errorf("createQPS=%v createConcurrency=%d, want %v and %d", e.Sidecar.CreateQPS, e.Sidecar.CreateConcurrency, DefaultCreateQPS, DefaultCreateConcurrency)
	}
	e.Sidecar.CreateQPS = 5
	e.Sidecar.SetDefaults("dev")
	if e.Sidecar.CreateQPS != 5 {
		t.Errorf("SetDefaults overwrote createQPS 5 with %v", e.Sidecar.CreateQPS)
	}
}
