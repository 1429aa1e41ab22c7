// Package emulator plays the Spark driver JVM's side of the Kubernetes API.
// It makes the HTTP calls Spark's Kubernetes scheduler backend makes
// through the fabric8 client, in the same order, with the same paths, query
// strings, bodies, retries and watch transport, so that the sparklet
// sidecar and a plain API server can be driven and compared without a JVM.
//
// References name the file and release read:
//   - Spark 3.5.4 and 4.0.0, K = resource-managers/kubernetes/core/src/main/scala/org/apache/spark
//   - fabric8 kubernetes-client 6.7.2 (Spark 3.5) and 7.1.0 (Spark 4.0),
//     F = kubernetes-client/src/main/java/io/fabric8/kubernetes/client/dsl/internal,
//     FA = kubernetes-client-api/src/main/java/io/fabric8/kubernetes/client
//
// The calls are those of K/scheduler/cluster/k8s/ExecutorPodsAllocator.scala,
// ExecutorPodsWatchSnapshotSource.scala, ExecutorPodsPollingSnapshotSource.scala,
// ExecutorPodsLifecycleManager.scala and KubernetesClusterSchedulerBackend.scala
// (apache/spark tags v3.5.4 and v4.0.0), made through F/BaseOperation.java,
// F/OperationSupport.java and F/WatchConnectionManager.java (fabric8io/
// kubernetes-client tags v6.7.2 and v7.1.0).
package emulator
