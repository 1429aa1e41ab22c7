// Command demo is `make demo`: real SparkPi through sparklet, shown step by step.
//
// It starts the local control plane and the pod runner, installs the
// sparklet webhook as the Helm chart would, runs the example driver pod and
// Job on a stock Spark JVM, and shows what sparklet did to them. With --emulator it runs kwok's fake nodes and the
// driver emulator instead, without JVMs or root.
package main
