// Package inject is the offline injector behind `sparklet inject`.
// It runs the webhook's mutation over YAML or JSON documents, read as
// kubectl reads them, so a platform team can test a policy and a GitOps
// user can pre-render driver pods.
package inject
