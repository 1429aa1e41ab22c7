// Package node runs sparklet on a real node: the kubelet, containerd,
// runc, CNI bridge networking, kube-proxy and cluster DNS of test/node,
// joined to the local control plane, with images built here.
//
// It runs when SPARKLET_E2E=1 (make test sets it: test/e2egate.NodeRuns)
// and needs root; it then fails, rather than skips, if a binary or an image
// is missing. The pod runner's tests whose claims it proves skip then
// (e2e/realspark's doc).
package node
