// Package kubecoretest serves kubecore.Interface from a client-go
// clientset, such as client-go's fake, for tests.
package kubecoretest
