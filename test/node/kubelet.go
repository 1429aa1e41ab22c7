package node

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletConfig is the kubelet's configuration. What these machines need:
// cgroup v1 accepted (failCgroupV1), the cgroupfs driver (containerd
// does not report one), no swap check. Its pods' cgroups sit under
// cgroupRoot, its state, pod logs and certificates in the node's
// directory. The API server authenticates to it with a client certificate
// of the cluster CA and is authorised by the API server (webhook), as in
// any hardened cluster; anonymous requests are refused.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
failSwapOn: false
address: %[3]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %[4]s
tlsPrivateKeyFile: %[5]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]s}
authorization:
  mode: Webhook
clusterDNS: [%[7]s]
clusterDomain: %[8]s
resolvConf: %[9]s
podLogsDir: %[10]s
serializeImagePulls: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%%
  imagefs.available: 2%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`

func (n *Node) startKubelet(ctx context.Context) error {
	c := n.cluster
	caPEM, _ := c.CA()
	clientCert, clientKey, err := c.IssueClientCert("system:node:"+Name, "system:nodes")
	if err != nil {
		return err
	}
	servingCert, servingKey, err := c.IssueServingCert(IP, Name)
	if err != nil {
		return err
	}
	// An empty resolv.conf: pods with dnsPolicy Default get no
	// nameserver of the machine's, and cluster DNS answers only for the
	// cluster's names.
	files := map[string][]byte{
		n.path("pki", "ca.crt"):          caPEM,
		n.path("pki", "kubelet.crt"):     servingCert,
		n.path("pki", "kubelet.key"):     servingKey,
		n.path("kubelet", "resolv.conf"): nil,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	if err := c.WriteKubeconfig(n.path("kubelet.kubeconfig"), n.server(), clientCert, clientKey); err != nil {
		return err
	}
	if err := makeCgroupRoot(); err != nil {
		return fmt.Errorf("cgroup root %s: %w", cgroupRoot, err)
	}
	config := fmt.Sprintf(kubeletConfig, cgroupRoot, n.socket(), IP,
		n.path("pki", "kubelet.crt"), n.path("pki", "kubelet.key"), n.path("pki", "ca.crt"),
		DNSIP, ClusterDomain, n.path("kubelet", "resolv.conf"), n.path("pod-logs"))
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	return n.run("kubelet", "--config", n.path("kubelet.yaml"),
		"--kubeconfig", n.path("kubelet.kubeconfig"),
		"--root-dir", n.path("kubelet"),
		"--hostname-override", Name, "--node-ip", IP,
		"--node-labels", "sparklet.io/real-node=true")
}

// waitReady waits for the node to be Ready and cluster DNS to be served.
func (n *Node) waitReady(ctx context.Context) error {
	return n.waitFor(ctx, "node "+Name+" Ready with cluster DNS", 3*time.Minute, func(ctx context.Context) (bool, error) {
		node, err := n.Client().CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err != nil { // not registered yet, or the API server is away
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				// Cluster DNS through kube-proxy's rules: the node is
				// whole once the API server's own name resolves.
				addrs, err := Resolve(ctx, "kubernetes.default.svc."+ClusterDomain)
				return err == nil && len(addrs) > 0, nil
			}
		}
		return false, nil
	})
}
