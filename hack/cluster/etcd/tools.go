//go:build tools

// Package tools records the command this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
