// Package podrunner plays the kubelet for one node of a local control plane.
// The pods bound to its node run as local processes, one network namespace
// per pod and one mount namespace per container, from the pod spec exactly
// as stored. No container image is pulled: an ImageResolver maps image
// references to local directories and entrypoints. See docs/pod-runner.md.
package podrunner
