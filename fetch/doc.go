// Package fetch runs `sparklet init`, the dependency init container.
// It downloads, verifies and unpacks a pod's dependencies.
package fetch
