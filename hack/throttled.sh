#!/usr/bin/env bash
# Reports how often the kernel throttled the real node's containers that
# have a CPU limit, while `go run ./bench start --node` (or any real-node
# run) starts pods beside it: for each container, by its name in
# containerd's log, the CFS periods it ran in, how many were throttled and
# for how long, and the CPU it used, as last read before it went.
#
#   hack/throttled.sh [seconds] [containerd.log]
#
# seconds defaults to 240; the log to bench start's. Needs root (it reads
# the node's cgroups, cgroup v1, under /sys/fs/cgroup/cpu/sparklet-node:
# test/node's cgroupRoot).
set -eu
seconds=${1:-240}
log=${2:-.cache/bench-start/node/node/logs/containerd.log}
root=/sys/fs/cgroup/cpu/sparklet-node/kubepods
declare -A last
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
	for dir in "$root"/*/pod*/*/; do
		[ -e "$dir/cpu.cfs_quota_us" ] || continue
		quota=$(<"$dir/cpu.cfs_quota_us") || continue
		[ "$quota" != -1 ] || continue
		id=$(basename "$dir")
		stat=$(tr '\n' ' ' <"$dir/cpu.stat" 2>/dev/null) || continue
		used=$(<"${dir/\/cpu\//\/cpuacct\/}cpuacct.usage") || continue
		last[$id]="quota ${quota}us/period; $stat; cpuacct.usage $used ns"
	done
	sleep 0.01
done
for id in "${!last[@]}"; do
	name=$(grep -m1 -o "name:\\\\\"[a-z0-9-]*\\\\\" returns container id \\\\\"$id" "$log" 2>/dev/null | cut -d'"' -f2 | tr -d '\\' || true)
	echo "${name:-?} ${id:0:12}: ${last[$id]}"
done | sort
