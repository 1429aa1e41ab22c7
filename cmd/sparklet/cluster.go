//go:build !sidecaronly

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

// kubeFlags are kubectl's connection flags: --kubeconfig (else
// $KUBECONFIG, else ~/.kube/config) and --context.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use (default: its current context)")
}

func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// client connects as kubectl would, and returns the context's namespace.
func (k *kubeFlags) client() (kubernetes.Interface, string, error) {
	cc := k.clientConfig()
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes credentials: %w", err)
	}
	rc.UserAgent = "sparklet/" + version.Version
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	return client, ns, nil
}

// policyFlags choose where the policy comes from: a file, the built-in
// policy, or (the default) the chart's ConfigMap in the cluster, as
// `istioctl kube-inject` reads the mesh's injection template.
type policyFlags struct {
	file          string
	ignoreCluster bool
	configMap     string
	namespace     string
}

// PolicyKey is the ConfigMap key the chart writes the policy under.
const policyKey = "policy.yaml"

func (p *policyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.file, "policy", "", "policy YAML file; skips the cluster")
	fs.BoolVar(&p.ignoreCluster, "ignore-cluster", false, "work offline: use --policy, or the built-in policy without it")
	fs.StringVar(&p.configMap, "policy-configmap", "sparklet-sparklet-policy", "the ConfigMap holding the policy (the chart's <release>-sparklet-policy)")
	fs.StringVar(&p.namespace, "policy-namespace", "sparklet-system", "the namespace sparklet is installed in")
}

// offline says whether the policy can be had without a cluster.
func (p *policyFlags) offline() bool { return p.file != "" || p.ignoreCluster }

// load returns the policy and where it came from.
func (p *policyFlags) load(ctx context.Context, client kubernetes.Interface) (*policy.Policy, string, error) {
	switch {
	case p.file != "":
		data, err := os.ReadFile(p.file)
		if err != nil {
			return nil, "", fmt.Errorf("--policy: %w", err)
		}
		pol, err := policy.Parse(data, version.Version)
		if err != nil {
			return nil, "", fmt.Errorf("--policy %s: %w", p.file, err)
		}
		return pol, p.file, nil
	case p.ignoreCluster:
		return policy.Default(version.Version), "the built-in policy", nil
	}
	from := fmt.Sprintf("ConfigMap %s/%s", p.namespace, p.configMap)
	cm, err := client.CoreV1().ConfigMaps(p.namespace).Get(ctx, p.configMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", fmt.Errorf("read the policy from %s: not found; name your release's with --policy-namespace and --policy-configmap, or work offline with --policy FILE or --ignore-cluster", from)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the policy from %s: %w; work offline with --policy FILE or --ignore-cluster", from, err)
	}
	data, ok := cm.Data[policyKey]
	if !ok {
		return nil, "", fmt.Errorf("%s has no %s key", from, policyKey)
	}
	pol, err := policy.Parse([]byte(data), version.Version)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", from, err)
	}
	return pol, from, nil
}
