// Package image tests `make image`: the image tarball's config, that the
// binary in its layer runs, that it is reproducible, and that its tag is
// the chart's default image.
package image
