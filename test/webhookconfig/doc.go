// Package webhookconfig builds sparklet's MutatingWebhookConfiguration.
// The local control plane registers this object; the Helm chart renders
// the same selectors and settings, and a chart test compares the two.
package webhookconfig
