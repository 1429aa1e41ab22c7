// Package sleepyjob is the PySpark job of the failure and
// dynamic-allocation tests, on the pod runner (e2e/realspark) and on the
// real node (e2e/node): sleepy.py, the ConfigMap that carries it, its
// plain driver pod, and the Spark properties those tests run it with.
package sleepyjob
