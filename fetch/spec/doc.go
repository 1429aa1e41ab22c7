// Package spec defines the sparklet.io/fetch annotation and the fetch policy.
// It is the pure part of dependency fetching that policy and patches use.
package spec
