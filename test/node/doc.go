// Package node runs a real Kubernetes node for the local control plane: the
// kubelet of the pinned Kubernetes version, containerd with Debian's runc,
// CNI bridge networking, kube-proxy in nftables mode and CoreDNS as the
// cluster DNS. The binaries come from hack/node/build.sh.
//
// The node lives in a network namespace of its own, joined to the host by a
// veth pair: the host end is the API server's advertised address, the node
// end the node's InternalIP. Pods get addresses on the node's bridge and
// routes only to the node, the Service range and the host end: nothing a
// pod sends can leave the machine. containerd pulls from no registry; every
// image it runs is imported from a tarball built here.
//
// One real node runs on a machine at a time: Start holds a lock until Stop.
package node
