// Package version holds the build version, set with -ldflags at build time.
package version
