// Package kubecore is a client of the few resources the sidecar reads and
// writes: core/v1's pods, Events, ConfigMaps, PVCs, Services and
// ResourceQuotas, and networking/v1's Ingresses; the TokenReviews and
// SubjectAccessReviews that admit Spark Connect clients; and, as raw JSON,
// a pod's metrics.k8s.io metrics and a StorageClass's allowVolumeExpansion.
//
// client-go's typed clients register every built-in API group in their
// scheme (k8s.io/client-go/kubernetes/scheme), and their init functions
// touch the code and data of all of them. The sidecar runs in every driver
// pod; without the other groups its binary is a third smaller and its
// resident memory about 8 MiB less.
package kubecore
