#!/bin/bash
# Stream-ordered allocation within a session's memory limit: an allocation from a pool past
# the limit is CUDA_ERROR_OUT_OF_MEMORY, what pools keep counts, and poolctl shows a pool's
# memory as the session's while it is held and not after.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

gp_config "default_memory 128M"
gp_start
out=$(GPUPOOL_MEMORY=64M run_client "$GP_TESTBIN/mempool_limit" over 2>&1) ||
	fail "mempool_limit over: $out"
case "$out" in *OK*) ;; *) fail "expected OK: $out" ;; esac
echo "$out"

# A session that holds 32 MiB from the default pool, then frees it in stream order.
rm -f "$T/M.in"
mkfifo "$T/M.in"
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/mempool_limit" hold \
	<"$T/M.in" >"$T/M.out" 2>"$T/M.err" &
pid=$!
exec {fd}>"$T/M.in"
said() {
	for _ in $(seq 1 1200); do
		grep -q "^$1$" "$T/M.out" 2>/dev/null && return 0
		grep -q ERROR "$T/M.out" 2>/dev/null && fail "mempool_limit: $(cat "$T/M.out")"
		sleep 0.05
	done
	fail "mempool_limit did not say $1: $(cat "$T/M.out" "$T/M.err")"
}
said BASE
wait_for '.sessions | length == 1' 10
base=$(status_json | jq '.sessions[0].memory_used')
echo >&"$fd"
said HELD
wait_for ".sessions[0].memory_used == $base + 33554432" 10
assert_status ".gpus[0].memory_used >= 33554432" "the GPU shows the pool's memory in use"
echo >&"$fd"
said FREED
wait_for ".sessions[0].memory_used == $base" 10
echo >&"$fd"
exec {fd}>&-
wait "$pid" || fail "mempool_limit hold: $(cat "$T/M.out" "$T/M.err")"
grep -q '^DONE$' "$T/M.out" || fail "mempool_limit hold did not finish: $(cat "$T/M.out")"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
