// Package certmanager runs cert-manager's controller, cainjector and
// webhook (hack/certmanager) as local processes against the local control
// plane, with cert-manager's CRDs installed and the webhook registered
// with the API server, for the chart's cert-manager mode.
package certmanager
