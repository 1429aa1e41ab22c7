// Package nodeenv is test/env's counterpart on the real node: a local
// control plane (test/cluster) with a real node (test/node) that imports
// only the images it needs, and sparklet's chart installed on it with helm
// as docs/install.md tells a platform team. make demo-node and make
// bench-node run on it; e2e/node drives the node itself.
package nodeenv
