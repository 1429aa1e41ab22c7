// Package selfcert manages the webhook's certificates without cert-manager.
// It keeps a CA and a serving certificate in a Secret, renews them well
// before they expire, patches the CA into the
// MutatingWebhookConfiguration, and serves whatever the Secret holds. One
// replica writes (leader election on a Lease); every replica serves.
package selfcert
