package e2egate

import "testing"

func TestProvenOnNode(t *testing.T) {
	for _, c := range []struct {
		name, e2e, all string
		runs           bool
	}{
		{"node runs", "1", "", false},
		{"node runs, all asked for", "1", "1", true},
		{"no end-to-end tests", "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SPARKLET_E2E", c.e2e)
			t.Setenv(PodRunnerAll, c.all)
			if NodeRuns() != (c.e2e == "1") {
				t.Errorf("NodeRuns() = %v with SPARKLET_E2E=%q", NodeRuns(), c.e2e)
			}
			ran := false
			t.Run("pod runner test", func(t *testing.T) {
				ProvenOnNode(t, "TestHelmInstall/X")
				ran = true
			})
			if ran != c.runs {
				t.Errorf("the pod runner test ran: %v, want %v", ran, c.runs)
			}
		})
	}
}
