// Command localcluster starts and stops the local control plane by hand.
// It is for people who want to poke at it with kubectl (make cluster-up,
// make cluster-down). Down also stops the cluster `hack/demo.sh
// --emulator` leaves running, and removes what killed pod runners left
// (bridges, network namespaces).
package main
