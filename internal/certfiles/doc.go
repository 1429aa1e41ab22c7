// Package certfiles serves a TLS certificate from a certificate and key
// file pair, such as a mounted kubernetes.io/tls Secret, and reloads it
// when either file changes, as cert-manager's file source does: new
// handshakes get the new certificate without a restart.
package certfiles
