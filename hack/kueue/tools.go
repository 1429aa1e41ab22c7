//go:build tools

// Package tools records the command this module builds.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
