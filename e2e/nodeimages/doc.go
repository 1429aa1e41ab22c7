// Package nodeimages checks the image tarballs `make node-images` writes
// into bin/images for the real node (hack/nodeimages, docs/real-node.md):
// what each image runs, as whom and from where, and the layers the Spark
// images share.
package nodeimages
