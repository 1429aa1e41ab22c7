package realspark

import (
	"testing"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/e2egate"
)

// nodeSparkVersion is the one version that e2e/node's failure and
// dynamic-allocation subtests run (its eachVersion). The pod runner's
// subtests of the other versions keep running: they prove those versions.
const nodeSparkVersion = "4.3.0"

// provenOnNodeAt skips t, the subtest of Spark d, when the real node's
// subtest nodeTest proves its claim on d's version (e2egate.ProvenOnNode).
func provenOnNodeAt(t *testing.T, d spark.Dist, nodeTest string) {
	t.Helper()
	if d.Version == nodeSparkVersion {
		e2egate.ProvenOnNode(t, nodeTest+"/"+d.Version)
	}
}
