package main

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig reads the kubeconfig when given, else the pod's service account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else if rc, err = rest.InClusterConfig(); err == rest.ErrNotInCluster {
		err = errors.New("not in a pod: pass --kubeconfig")
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes credentials: %w", err)
	}
	return rc, nil
}
