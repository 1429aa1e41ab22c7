// Package nodeimages names the images hack/nodeimages/build.sh writes for
// the real node and where it writes them (docs/real-node.md).
package nodeimages
