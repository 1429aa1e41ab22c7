#!/bin/bash
# /opt/decom.sh of the apache/spark images hack/nodeimages builds: the
# preStop hook Spark gives executor pods when spark.decommission.enabled is
# true. Written for sparklet to do what Spark's own
# (resource-managers/kubernetes/docker/src/main/dockerfiles/spark/decom.sh)
# means to: send the executor JVM SIGPWR, which starts its decommissioning,
# and wait for it to exit, logging to the container's termination log. The
# kubelet ends the wait after the pod's termination grace period.
log=/dev/termination-log
say() {
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" | tee -a "$log" 2>/dev/null || true
}

# Every java process, as Spark's script does (killall java): the
# container's executor JVM.
pids=$(pgrep -x java || true)
if [ -z "$pids" ]; then
  say "decom: no executor JVM is running"
  exit 0
fi
say "decom: sending SIGPWR to the executor JVM ($pids)"
# shellcheck disable=SC2086 # one argument per pid
kill -PWR $pids
# Until each has exited: gone, or a zombie its parent has not reaped yet.
for pid in $pids; do
  while state=$(ps -o stat= -p "$pid") && [ "${state#Z}" = "$state" ]; do
    sleep 1
  done
done
say "decom: the executor JVM has exited"
