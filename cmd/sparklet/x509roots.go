//go:build !sidecaronly

package main

// The image is the static binary on an empty base, with no
// /etc/ssl/certs: this bundle of Mozilla's roots is used only when the
// system has none, so `sparklet init` can fetch over HTTPS there.
import _ "golang.org/x/crypto/x509roots/fallback"
