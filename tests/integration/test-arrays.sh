#!/bin/bash
# CUDA arrays, 2-D and 3-D copies, textures and surfaces (arrays.c): directly on softgpu and
# through the pool; hostile copies, handles and texture descriptors refused, and texture
# objects bounded (raw_client arrays); then arrays are charged to the session: past its limit CUDA_ERROR_OUT_OF_MEMORY,
# and `poolctl status --json` shows the charge while the array (and a mipmapped one) is held
# and none once they are destroyed.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

out=$(on_softgpu "$GP_TESTBIN/arrays" 2>&1) || fail "softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(ARRAYS_POOL=1 run_client "$GP_TESTBIN/arrays" 2>&1) || fail "pool: $out"
echo "pool: $out"
out=$(RAW_ARRAY_OBJECTS=1 "$GP_TESTBIN/raw_client" arrays 2>&1) || fail "raw array calls: $out"
echo "$out"
# mipmapped arrays charged every level's layers and faces, in a 456 MiB session
out=$(RAW_MEMORY=$((456 << 20)) "$GP_TESTBIN/raw_client" arrays 2>&1) || fail "raw array calls, 456 MiB: $out"
echo "$out" | grep 'of 2 levels'
# the pool still serves sessions after the hostile one
out=$(run_client "$GP_TESTBIN/arrays" 2>&1) || fail "pool, after: $out"

rm -f "$T/L.in" "$T/L.out"
mkfifo "$T/L.in"
GPUPOOL_MEMORY=64M env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/arrays" limit \
	<"$T/L.in" >"$T/L.out" 2>"$T/L.err" &
L_PID=$!
exec {L_IN}>"$T/L.in"
until_line() {
	for _ in $(seq 1 1200); do
		grep -qx "$1" "$T/L.out" 2>/dev/null && return 0
		kill -0 "$L_PID" 2>/dev/null || break
		sleep 0.05
	done
	fail "arrays limit: no '$1': $(cat "$T/L.out" "$T/L.err")"
}
until_line ready
wait_for '.sessions | length == 1' 10
base=$(status_json | jq '.sessions[0].memory_used')
echo >&"$L_IN"
until_line held
assert_status ".sessions[0].memory_used == $base + 33554432" "32 MiB charged while held"
echo >&"$L_IN"
until_line mipmapped
assert_status ".sessions[0].memory_used == $base + 33554432 + 5242880" "and 5 MiB for a mipmapped array"
echo >&"$L_IN"
until_line released
assert_status ".sessions[0].memory_used == $base" "no charge once destroyed"
echo >&"$L_IN"
exec {L_IN}>&-
wait "$L_PID" || fail "arrays limit: $(cat "$T/L.out" "$T/L.err")"
grep -q FAIL "$T/L.out" && fail "arrays limit: $(cat "$T/L.out")"
cat "$T/L.out"
gp_stop
echo PASS
