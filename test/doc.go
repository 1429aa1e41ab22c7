// Package test checks the whole module: its layering against the rules and
// against the package table of docs/architecture.md, the docs' links,
// function lengths and package docs. The test harness is below it.
package test
