// Package executors follows a Spark application's executor pods through
// the API server, for the end-to-end tests of the pod runner and the real
// node: how many were alive at once, duplicates of one executor id, and
// what the application left behind.
package executors
