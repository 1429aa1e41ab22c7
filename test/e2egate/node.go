package e2egate

import (
	"os"
	"testing"
)

// PodRunnerAll is the variable that, set to 1, runs the pod runner tests
// whose claims the real node proves, beside the node's.
const PodRunnerAll = "SPARKLET_POD_RUNNER_ALL"

// NodeRuns reports whether e2e/node runs its real node in this
// configuration: when the end-to-end tests were asked for (make test asks).
// It then fails, rather than skips, if the node cannot start (no root, a
// binary or an image missing), so a claim it proves is never lost silently.
func NodeRuns() bool {
	return asked()
}

// ProvenOnNode skips t, a pod runner test, when the real node runs here and
// its subtest nodeTest (e2e/node TestHelmInstall/...) proves what t does,
// unless PodRunnerAll=1. Where the pod runner and the node disagree the
// node is right, so each claim is proven once per run, on the node.
func ProvenOnNode(t testing.TB, nodeTest string) {
	t.Helper()
	if NodeRuns() && os.Getenv(PodRunnerAll) != "1" {
		t.Skipf("proven on the real node by e2e/node %s; set %s=1 to run it on the pod runner too", nodeTest, PodRunnerAll)
	}
}
