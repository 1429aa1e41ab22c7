// Package objectstore runs a real S3-compatible store for the tests: the
// Versity S3 Gateway over its posix backend (hack/versitygw), on an address
// the caller picks (the pod runner's bridge or the real node's host end, so
// that pods reach it), and reads what it holds through the S3 API,
// Spark's event logs among it.
package objectstore
