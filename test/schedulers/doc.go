// Package schedulers runs batch schedulers out-of-cluster against a local
// control plane (test/cluster): Apache YuniKorn, built by hack/yunikorn
// into bin/yunikorn-scheduler, and Kueue, built by hack/kueue into
// bin/kueue (kueue.go).
package schedulers
