// Package sidecar is the sparklet sidecar that runs inside a Spark driver pod.
// It serves the JVM the part of the Kubernetes API that Spark's scheduler
// backend uses, allocates executor pods under the executor policy, serves
// watches and polls from one informer, and deletes the application's
// executors, ConfigMaps and PVCs when the driver ends.
package sidecar
