// Package cluster runs a real Kubernetes control plane on loopback.
//
// Its parts are etcd, kube-apiserver (with the admission plugins hardened
// clusters run), kube-controller-manager, kube-scheduler and, unless asked
// not to, kwok, whose fake nodes report their pods Running. The binaries come from
// hack/cluster/build.sh. No container runtime is needed.
package cluster
