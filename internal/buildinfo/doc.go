// Package buildinfo exports sparklet_build_info, the build's version,
// commit and Go version, as a Prometheus metric.
package buildinfo
