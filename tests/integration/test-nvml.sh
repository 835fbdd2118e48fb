#!/bin/bash
# The client's NVML shim (lib/gpupool/libnvidia-ml.so.1) reports the session's GPUs as the program
# sees them through CUDA: the same names and UUIDs (the pool's own, as poolctl lists them), the
# session's memory limit as each device's size, what the session holds as used and the
# session's own busy time as utilization. Without cuInit it opens no session and lists no
# devices.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=512M

NVML_PRELOAD=$CLIENT_PRELOAD:$GP_STAGE/lib/gpupool/libnvidia-ml.so.1

# nvml_start NAME ARGS...: nvml_client ARGS in the background through the interposer and the
# shim, stdin a fifo held open in fd NAME_FD, output in $T/NAME.out; returns once it is ready.
nvml_start() {
	local name=$1 fd
	shift
	mkfifo "$T/$name.in"
	env LD_PRELOAD="$NVML_PRELOAD" "$CLIENT_ASAN" "${NVML_ENV[@]}" "$GP_TESTBIN/nvml_client" "$@" \
		<"$T/$name.in" >"$T/$name.out" 2>"$T/$name.err" &
	eval "${name}_PID=$!"
	exec {fd}>"$T/$name.in"
	eval "${name}_FD=$fd"
	for _ in $(seq 1 400); do
		grep -q '^ready$' "$T/$name.out" && return 0
		kill -0 "$(eval echo "\$${name}_PID")" 2>/dev/null ||
			fail "nvml_client $*: $(cat "$T/$name.out" "$T/$name.err")"
		sleep 0.05
	done
	fail "nvml_client $* did not get ready"
}

nvml_finish() {
	local name=$1 fd pid
	fd=$(eval echo "\$${name}_FD")
	pid=$(eval echo "\$${name}_PID")
	echo >&"$fd"
	exec {fd}>&-
	wait "$pid" || fail "nvml_client $name: $(cat "$T/$name.out" "$T/$name.err")"
	cat "$T/$name.out"
}

field() { # field FILE PREFIX KEY: the KEY=value of the first line starting with PREFIX
	grep -m1 "^$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p"
}

gp_start

# NVML alone: nvmlInit succeeds, no device, and the pool holds no session for it.
NVML_ENV=()
nvml_start A nocuda
grep -q '^nvml count 0$' "$T/A.out" || fail "no devices without a session: $(cat "$T/A.out")"
assert_status '.sessions | length == 0' "the shim must not open a session"
assert_status '[.gpus[].memory_reserved] | add == 0' "nothing reserved for an NVML-only program"
nvml_finish A
grep -c '^nvml count 0$' "$T/A.out" | grep -qx 2 || fail "still no devices at the end"

# After cuInit: two GPUs with a 64 MiB limit each, 3 MiB allocated on the first.
NVML_ENV=(GPUPOOL_GPUS=2 GPUPOOL_MEMORY=64M)
nvml_start B cuda 3145728
out=$T/B.out
cat "$out"
wait_for '(.sessions | length) == 1 and .sessions[0].state == "active"' 10
status_json >"$T/status.json"
limit=$(jq '.sessions[0].memory_limit' "$T/status.json")
[ "$limit" = 67108864 ] || fail "session limit $limit"
grep -q '^nvml count 2$' "$out" || fail "NVML should list the session's 2 GPUs"
grep -q '^cuda count 2$' "$out" || fail "CUDA should list 2 GPUs"
for i in 0 1; do
	g=$(jq ".sessions[0].gpus[$i]" "$T/status.json")
	puuid=$(jq -r ".gpus[] | select(.index == $g) | .uuid" "$T/status.json")
	pname=$(jq -r ".gpus[] | select(.index == $g) | .name" "$T/status.json")
	[ "$(field "$out" "nvml dev $i " uuid)" = "$puuid" ] || fail "device $i: NVML UUID is not pool GPU $g's $puuid"
	[ "$(field "$out" "cuda dev $i " uuid)" = "$puuid" ] || fail "device $i: CUDA UUID is not $puuid"
	[ "$(field "$out" "nvml dev $i " name)" = "$pname" ] || fail "device $i: name"
	[ "$(field "$out" "cuda mem $i " total)" = "$limit" ] || fail "device $i: cuDeviceTotalMem"
	grep -q "^nvml util $i 0$" "$out" || fail "device $i: utilization should be the session's"
	grep -q "^nvml procs $i 3$" "$out" || fail "device $i: processes should be NOT_SUPPORTED"
done
# Device 0 (its primary context is retained): the limit as total, the session's use as used.
g0=$(jq ".sessions[0].gpus[0]" "$T/status.json")
[ "$(field "$out" "nvml mem 0 " total)" = "$limit" ] || fail "NVML total should be the session's limit"
[ "$(field "$out" "cuda meminfo" total)" = "$limit" ] || fail "cuMemGetInfo total"
used=$(field "$out" "nvml mem 0 " used)
[ "$used" = "$(jq '.sessions[0].memory_used' "$T/status.json")" ] ||
	fail "NVML used $used is not the session's $(jq '.sessions[0].memory_used' "$T/status.json")"
[ "$used" = "$(jq ".gpus[] | select(.index == $g0) | .memory_used" "$T/status.json")" ] ||
	fail "NVML used $used is not GPU $g0's use"
[ "$used" -ge 3145728 ] || fail "used $used is less than the allocation"
[ "$(field "$out" "cuda meminfo" free)" = "$(field "$out" "nvml mem 0 " free)" ] ||
	fail "NVML free should be cuMemGetInfo's"
# Device 1: the session holds no context there, so its use cannot be asked.
grep -q '^nvml mem 1 unsupported$' "$out" || fail "device 1 memory should be NOT_SUPPORTED"
grep -q "^nvml driver $(jq -r .version "$T/status.json") cuda " "$out" || fail "driver version"
nvml_finish B >/dev/null
wait_for '.sessions | length == 0' 10

# NVML initialized before cuInit: no devices, then the session's once cuInit opened it.
NVML_ENV=(GPUPOOL_GPUS=1 GPUPOOL_MEMORY=32M)
nvml_start C late 1048576
grep -m1 '^nvml count' "$T/C.out" | grep -qx 'nvml count 0' || fail "no devices before cuInit"
grep '^nvml count' "$T/C.out" | sed -n 2p | grep -qx 'nvml count 1' ||
	fail "the session's GPU after cuInit: $(cat "$T/C.out")"
[ "$(field "$T/C.out" "nvml mem 0 " total)" = 33554432 ] || fail "late: the session's limit"
nvml_finish C >/dev/null
wait_for '.sessions | length == 0' 10

# Utilization is the session's own busy time (its worker's driver's count): 0 over an idle
# period, and over one in which a kernel ran 1 s by the device's timer at least that share of
# the period's bound (nvml_client checks it from its own two measurements).
NVML_ENV=(GPUPOOL_GPUS=1)
out=$(env LD_PRELOAD="$NVML_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/nvml_client" util 1000 2>&1) ||
	fail "utilization: $out"
echo "$out" | grep '^nvml .*util'
echo "$out" | grep -q '^nvml busy util gpu=[1-9]' || fail "a busy period should read above 0: $out"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
