#!/bin/bash
# Virtual memory management (vmm.c): directly on softgpu and through the pool; then
# cuMemCreate is charged to the session: past its limit CUDA_ERROR_OUT_OF_MEMORY, and
# `poolctl status` shows the charge while the memory is held (also released but still
# mapped) and none once it is unmapped.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

out=$(on_softgpu "$GP_TESTBIN/vmm" 2>&1) || fail "softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/vmm" 2>&1) || fail "pool: $out"
echo "pool: $out"
# Addresses, sizes and handles the session does not own, or that wrap, are refused.
out=$("$GP_TESTBIN/raw_client" vmm 2>&1) || fail "raw vmm calls: $out"
echo "$out"

# hold_start runs hold_session: run vmm's limit mode the same way, by hand.
rm -f "$T/L.in" "$T/L.out"
mkfifo "$T/L.in"
GPUPOOL_MEMORY=64M env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/vmm" limit \
	<"$T/L.in" >"$T/L.out" 2>"$T/L.err" &
L_PID=$!
exec {L_IN}>"$T/L.in"
until_line() {
	for _ in $(seq 1 1200); do
		grep -qx "$1" "$T/L.out" 2>/dev/null && return 0
		kill -0 "$L_PID" 2>/dev/null || break
		sleep 0.05
	done
	fail "vmm limit: no '$1': $(cat "$T/L.out" "$T/L.err")"
}
until_line ready
wait_for '.sessions | length == 1' 10
base=$(status_json | jq '.sessions[0].memory_used')
echo >&"$L_IN"
until_line held
assert_status ".sessions[0].memory_used == $base + 33554432" "32 MiB charged while held"
echo >&"$L_IN"
until_line mapped
assert_status ".sessions[0].memory_used == $base + 33554432" "still charged while mapped"
echo >&"$L_IN"
until_line released
assert_status ".sessions[0].memory_used == $base" "no charge once unmapped"
echo >&"$L_IN"
exec {L_IN}>&-
wait "$L_PID" || fail "vmm limit: $(cat "$T/L.out" "$T/L.err")"
grep -q FAIL "$T/L.out" && fail "vmm limit: $(cat "$T/L.out")"
cat "$T/L.out"
gp_stop
echo PASS
