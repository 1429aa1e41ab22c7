package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the sparklet release; "dev" for a plain go build.
var Version = "dev"

// Commit is the source commit, set with -ldflags by make; when empty, the
// commit Go recorded in the build info (builds with VCS stamping) is used.
var Commit = ""

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the version, the commit ("unknown" when neither -ldflags nor
// the build info carry one; "-dirty" when built from a modified tree) and
// the Go toolchain that built the binary.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		if info.Commit == "" {
			dirty := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.Commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if dirty && info.Commit != "" {
				info.Commit += "-dirty"
			}
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the multi-line form `sparklet version` prints.
func (i Info) String() string {
	return fmt.Sprintf("version: %s\ncommit: %s\ngo: %s\nplatform: %s\n", i.Version, i.Commit, i.GoVersion, i.Platform)
}
