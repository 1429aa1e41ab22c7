// Package version holds the build version, set with -ldflags at build time.
package version

// Version is the sparklet release; "dev" for a plain go build.
var Version = "dev"
