package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sparklet/sparklet/internal/version"
)

// Revision is the VCS commit the binary was built from, with "-dirty" for
// a modified tree, or "unknown" without VCS information.
func Revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && rev != "unknown" {
		rev += "-dirty"
	}
	return rev
}

// Collector is the gauge sparklet_build_info, always 1, labelled with the
// version, revision and Go version, as Prometheus' own build_info metrics.
func Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sparklet_build_info",
		Help: "Always 1; the labels tell the sparklet version, the commit it was built from and its Go version.",
		ConstLabels: prometheus.Labels{
			"version": version.Version, "revision": Revision(), "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}
