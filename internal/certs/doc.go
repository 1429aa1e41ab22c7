// Package certs makes ECDSA P-256 certificates and their keys, in PEM.
// It makes certificate authorities and the certificates they sign.
package certs
