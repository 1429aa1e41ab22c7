// Command pause is /pause of the pause image hack/nodeimages builds: the
// process that holds a pod sandbox's namespaces. Written for sparklet to
// do what Kubernetes' build/pause/linux/pause.c (v1.37.2) does: wait for
// SIGINT or SIGTERM and exit 0, and as the sandbox's PID 1 reap the
// zombies the pod's processes leave behind.
package main
