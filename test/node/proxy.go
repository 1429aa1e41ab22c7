package node

import "fmt"

// kubeProxyConfig runs kube-proxy in nftables mode in the node's network
// namespace (its rules live there, not on the host), leaves the kernel's
// conntrack settings alone, and serves health and metrics on the node's
// loopback.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
mode: nftables
hostnameOverride: %[2]s
clusterCIDR: %[3]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

func (n *Node) startKubeProxy() error {
	cert, key, err := n.cluster.IssueClientCert("system:kube-proxy")
	if err != nil {
		return err
	}
	kubeconfig := n.path("kube-proxy.kubeconfig")
	if err := n.cluster.WriteKubeconfig(kubeconfig, n.server(), cert, key); err != nil {
		return err
	}
	config := n.path("kube-proxy.yaml")
	if err := writeFile(config, fmt.Sprintf(kubeProxyConfig, kubeconfig, Name, PodCIDR)); err != nil {
		return err
	}
	return n.run("kube-proxy", "--config", config)
}
