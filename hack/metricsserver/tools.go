//go:build tools

// Package tools records the command this module builds.
package tools

import _ "sigs.k8s.io/metrics-server/cmd/metrics-server"
