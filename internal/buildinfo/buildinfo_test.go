package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sparklet/sparklet/internal/version"
)

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	want := `# HELP sparklet_build_info Always 1; the labels tell the sparklet version, the commit it was built from and its Go version.
# TYPE sparklet_build_info gauge
sparklet_build_info{goversion="` + runtime.Version() + `",revision="` + Revision() + `",version="` + version.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sparklet_build_info"); err != nil {
		t.Error(err)
	}
	if Revision() == "" {
		t.Error("empty revision; want the commit or unknown")
	}
}
