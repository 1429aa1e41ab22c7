// Package fakeapi is a small in-memory Kubernetes core/v1 API for tests.
// It serves pods, configmaps, persistentvolumeclaims and services in any
// namespace, with get, list, watch (WebSocket and HTTP streaming), create,
// delete, deletecollection and patch, label and field selectors, resource
// versions, and a record of every request. Faults can be injected: status
// answers, refused WebSocket upgrades and watch ERROR events.
package fakeapi
